"""Code the project did not write, as each library's docs write it: the tools are tested on it."""
