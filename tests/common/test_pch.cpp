// The program that builds the test programs' shared precompiled header (tests/CMakeLists.txt:
// rankflow_test_pch); it is never run.
int main() {
  return 0;
}
