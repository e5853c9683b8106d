#!/bin/sh
{{HEADER}}
#
# NetworkManager-dispatcher runs dispatcher.d scripts with the interface as $1 and the action as $2
# (up, down, pre-up, hostname, connectivity-change, ...). Routes are re-applied on up and reapply.
# This hook re-applies per-NIC policy routing ({{ROUTING_SCRIPT}}) to every fabric NIC that is up
# whenever an interface comes up: a manager that reconfigures one link may drop the rules of all.
iface=${1:-}
case ${2:-} in
	up | reapply | dhcp4-change) ;;
	*) exit 0 ;;
esac
{{RUN}}
