# shellcheck shell=sh
# Rollback's retire (src/render/apply-script.ts renderRollbackScript). $REPLACED, retire: change.sh's.

# give_back PATH: ibfleet's file at PATH gone, an admin's link it replaced back in its place. An
# admin's link at ibfleet's path (one a deploy that failed put back, or one never deployed over)
# stays; one a deploy replaced goes back in place of ibfleet's file.
give_back() {
	[ -L "$1" ] || retire "$1" || return 1
	[ -L "$REPLACED$1" ] && [ ! -L "$1" ] || return 0
	mv -fT "$REPLACED$1" "$1" || return 1
	echo "ibfleet: put back $1, a link to $(readlink "$1")"
}
