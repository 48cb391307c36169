// Package packages decides what a vis-agent python run imports: which
// environment it runs in (Resolve: a uv project's, the activated one, or
// the shared environment of its CPython version), the import roots a
// project declares, and the shared environments themselves.
//
// Every run with packages runs inside a virtual environment, so that
// CPython's own site module puts its site-packages and .pth files on
// sys.path, pip installs there, and child processes started with
// sys.executable see the same packages. The shared packages of each
// CPython minor version are the site-packages of a real virtual
// environment of that version, with pip in it and without the
// installation's own site-packages.
package packages
