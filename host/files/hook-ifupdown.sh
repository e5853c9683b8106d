#!/bin/sh
{{HEADER}}
#
# ifup runs if-up.d through run-parts after configuring an interface, with IFACE, MODE=start and
# PHASE=post-up in the environment; after `ifup -a` it runs once more with IFACE=--all.
# This hook re-applies per-NIC policy routing ({{ROUTING_SCRIPT}}) to every fabric NIC that is up
# whenever an interface comes up: a manager that reconfigures one link may drop the rules of all.
iface=${IFACE:-}
[ "${MODE:-start}" = start ] || exit 0
{{RUN}}
