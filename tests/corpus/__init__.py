"""Code the tools are tested on, written the way each library's docs write it."""
