// A C extension that reaches a loopback TCP port with libc directly, as
// any C extension can: no audit event sees it, only the kernel layer of
// --no-network stops it. Built by no_network_test.go for each CPython.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <arpa/inet.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static PyObject *reach(PyObject *self, PyObject *arg) {
	(void)self;
	long port = PyLong_AsLong(arg);
	if (port == -1 && PyErr_Occurred()) {
		return NULL;
	}
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0) {
		return PyErr_SetFromErrno(PyExc_OSError);
	}
	struct sockaddr_in addr;
	memset(&addr, 0, sizeof addr);
	addr.sin_family = AF_INET;
	addr.sin_port = htons((unsigned short)port);
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
		PyErr_SetFromErrno(PyExc_OSError);
		close(fd);
		return NULL;
	}
	char buf[128];
	ssize_t n = read(fd, buf, sizeof buf);
	close(fd);
	return PyBytes_FromStringAndSize(buf, n < 0 ? 0 : n);
}

static PyMethodDef methods[] = {{"reach", reach, METH_O, "connect to 127.0.0.1:port and read"}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "cnet", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_cnet(void) { return PyModule_Create(&module); }
