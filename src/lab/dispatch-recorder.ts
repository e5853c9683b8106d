/**
 * The lab's networkd-dispatcher: the real program, loaded by a small Python wrapper that records
 * each link report it has handled. manager-boot.ts starts it; dispatched.ts reads what it records.
 */

/** Where, in a host's boot directory (manager-boot.ts HOST_BOOT_DIR), the recorder writes what it has handled, a file per link. */
export const DISPATCHED_SUBDIR = 'dispatched';

/**
 * networkd-dispatcher itself (its own program, loaded as a module), with one addition: each time it
 * has handled a link's state report from networkd — run the hooks of a changed state to the end, or
 * found nothing changed — it writes the link's file in the directory of its first argument:
 * `COUNT ADMINISTRATIVE OPERATIONAL`, the reports handled so far and the states it now knows. Its
 * hooks, their order and environment are the real program's; the file is how `lab restart` and
 * `lab flap` know the hooks for networkd's latest report have run (dispatched.ts), where the real
 * program says nothing once its startup is over.
 */
export const DISPATCH_RECORDER = `import importlib.machinery, importlib.util, os, shutil, sys
path = shutil.which("networkd-dispatcher")
loader = importlib.machinery.SourceFileLoader("networkd_dispatcher", path)
nd = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
loader.exec_module(nd)
record = sys.argv.pop(1)
shutil.rmtree(record, ignore_errors=True)
os.makedirs(record)
handle = nd.Dispatcher.handle_state
handled = {}
def handle_state(self, name, *args, **kwargs):
    try:
        return handle(self, name, *args, **kwargs)
    finally:
        link = self.ifaces_by_name.get(name)
        if link is not None:
            handled[name] = handled.get(name, 0) + 1
            staged = os.path.join(record, "." + name)
            with open(staged, "w") as f:
                f.write("%d %s %s\\n" % (handled[name], link.administrative, link.operational))
            os.replace(staged, os.path.join(record, name))
nd.Dispatcher.handle_state = handle_state
sys.argv[0] = path
nd.main()`;
