package plan

// The C half, plan.c, is compiled here and linked into every binary that
// imports this package; pyembed's fastpath.c and sandbox/client/runpath's
// runpath.c call it before the Go runtime starts, including plan.h through
// their cgo flags.

/*
#cgo CFLAGS: -Wall -Wextra
*/
import "C"
