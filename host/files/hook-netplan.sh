#!/bin/sh
{{HEADER}}
#
# networkd-dispatcher runs the executables in routable.d and configured.d with IFACE and STATE in the
# environment each time systemd-networkd reports an interface routable, or configured (netplan
# renderer: networkd). Both: networkd 248+ drops rules it did not make when it reconfigures a link
# or restarts, and networkd 257 then reports the link configured again but not routable.
# This hook re-applies per-NIC policy routing ({{ROUTING_SCRIPT}}) to every fabric NIC that is up
# whenever an interface comes up: a manager that reconfigures one link may drop the rules of all.
iface=${IFACE:-}
case ${STATE:-routable} in
	routable | configured) ;;
	*) exit 0 ;;
esac
{{RUN}}
