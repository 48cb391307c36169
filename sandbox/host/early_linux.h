// The interpreter child a host's C constructor started (early_linux.c).
#ifndef VIS_HOST_EARLY_H
#define VIS_HOST_EARLY_H

struct vis_early {
	int pid; // -1: none
	int link, calls, stacks, out, err; // the host's ends
	int drops_privileges; // started with jail.EarlyFlag
	int own_network; // started with protocol.NetworkFlag (an allow list)
};

// vis_host_take_early hands the child over once: 1 and *e filled, or 0.
int vis_host_take_early(struct vis_early *e);

#endif
