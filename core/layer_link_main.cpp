// The program of the layer_link_* checks (core/CMakeLists.txt): it links one
// layer whole with only the layers it may use; it is never run.
int main() { return 0; }
