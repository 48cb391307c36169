// Package packages decides what a vis-agent python run imports: the shared
// packages folder or a uv project's environment, the import roots a
// project declares, and where pip installs.
//
// Every run with packages runs inside a virtual environment, so that
// CPython's own site module puts its site-packages and .pth files on
// sys.path and child processes started with sys.executable see the same
// packages: a project's .venv, or the shared environment, a small venv
// vis-agent keeps per CPython version whose site-packages is the shared
// packages folder.
package packages
