case $iface in '' | lo) exit 0 ;; esac

log() {
	printf 'ibfleet-routes hook: %s\n' "$*" >&2
	command -v logger >/dev/null 2>&1 && logger -t ibfleet-routes -- "$*" 2>/dev/null
	return 0
}

if [ ! -x {{ROUTING_SCRIPT}} ]; then
	log "$iface: {{ROUTING_SCRIPT}} is missing; run ibfleet deploy"
	exit 0
fi
{{REPAIR_COMMAND}} || log "$iface: routing script failed (exit $?)"
{{WATCH}}
exit 0
