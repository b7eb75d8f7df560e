// Placeholder entry point; replaced by the real `kiln` command line.
int main() { return 0; }
