// The translation unit that builds the tests' precompiled header (test/CMakeLists.txt, test_pch): the
// header itself is what CMake generates from target_precompile_headers; nothing is compiled here.
