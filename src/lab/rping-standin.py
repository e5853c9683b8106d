#!/usr/bin/python3 -IS
# rping stand-in of the ibfleet rehearsal lab (not rdma-core's rping; see docs/lab-internals.md).
#
# Lab hosts have no HCA, so this program takes rping's options and prints rping's lines, and makes
# the decision RDMA CM makes over TCP instead of verbs: the connection is bound to the RDMA port of
# the interface that owns the -I address (the server: of the -a address), exactly as rdma_bind_addr
# binds a cm_id to a device. The request then reaches the peer through whichever interface the
# peer's ARP answer points at, and the kernel's routing, ARP and reverse-path settings decide where
# it arrives. A request that arrives on another port than the listener's finds no listener there
# and is refused — rping's "cma event RDMA_CM_EVENT_REJECTED, error 8" (invalid service ID); one
# whose answer goes back through the wrong NIC never completes. So it fails where the seeds' rping
# fails (anything through NIC 2 before the per-NIC routing) and where a port is not ACTIVE, read
# from the same /sys/class/infiniband the product reads (the lab emulates it per host).
import errno
import fcntl
import os
import signal
import socket
import struct
import sys
import time

SO_BINDTODEVICE = 25
SIOCGIFADDR = 0x8915
RESOLVE_TIMEOUT_S = 2.0  # rping's rdma_resolve_addr / rdma_resolve_route timeout
CONNECT_TIMEOUT_S = 3.0
# Each run appends `ROLE PID START END` (CLOCK_MONOTONIC seconds, one clock for every lab host) to
# the host's own log when it ends, so a test can see how many ran at once on a host.
RUNS_LOG = "/run/ibfleet-lab-host/rping-runs.log"


def usage():
    print("rping -s [-vVd] [-S size] [-C count] [-a addr] [-p port]")
    print("rping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]")
    print("\t-c\t\tclient side")
    print("\t-I\t\tSource address to bind to for client.")
    print("\t-s\t\tserver side.  To bind to any address with IPv6 use -a ::0")
    print("\t-v\t\tdisplay ping data to stdout")
    print("\t-V\t\tvalidate ping data")
    print("\t-d\t\tdebug printfs")
    print("\t-S size \tping data size")
    print("\t-C count\tping count times")
    print("\t-a addr\t\taddress")
    print("\t-p port\t\tport")
    print("\t-P\t\tpersistent server mode allowing multiple connections")
    print("\t-q\t\tuse self-created, self-modified QP")
    print("(ibfleet lab stand-in: RDMA CM's routing decision over TCP)")
    sys.exit(22)


def parse(argv):
    opts = {"server": None, "addr": None, "src": None, "port": 7174, "count": 0, "size": 64, "verbose": 0, "debug": 0, "persistent": False}
    with_value = set("aIpCSt")
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("-") or arg == "-":
            usage()
        j = 1
        while j < len(arg):
            flag = arg[j]
            if flag in with_value:
                value = arg[j + 1:] or (argv[i + 1] if i + 1 < len(argv) else None)
                if value is None:
                    usage()
                if not arg[j + 1:]:
                    i += 1
                if flag == "a":
                    opts["addr"] = value
                elif flag == "I":
                    opts["src"] = value
                elif flag == "p":
                    opts["port"] = int(value)
                elif flag == "C":
                    opts["count"] = int(value)
                    if opts["count"] < 0:
                        sys.stderr.write("Invalid count %d\n" % opts["count"])
                        sys.exit(22)
                elif flag == "S":
                    opts["size"] = int(value)
                    if opts["size"] < 26 or opts["size"] > 65535:
                        sys.stderr.write("Invalid size %d (valid range is 26 to 65536)\n" % opts["size"])
                        sys.exit(22)
                break
            if flag == "s":
                opts["server"] = True
            elif flag == "c":
                opts["server"] = False
            elif flag == "v":
                opts["verbose"] += 1
            elif flag == "d":
                opts["debug"] += 1
            elif flag == "P":
                opts["persistent"] = True
            elif flag not in "Vq":
                usage()
            j += 1
        i += 1
    if opts["server"] is None:
        usage()
    return opts


def debug(opts, text):
    if opts["debug"]:
        print(text, flush=True)


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def interface_of(address):
    """The interface that carries `address` (rdma_bind_addr's lookup), or None."""
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for _, name in socket.if_nameindex():
            try:
                reply = fcntl.ioctl(probe.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue
            if socket.inet_ntoa(reply[20:24]) == address:
                return name
    finally:
        probe.close()
    return None


def rdma_port_of(iface):
    """(device, port) behind `iface`, as ibdev2netdev maps them; None without an RDMA device."""
    root = "/sys/class/infiniband"
    try:
        devices = sorted(os.listdir(root))
    except OSError:
        return None
    for device in devices:
        ports = os.path.join(root, device, "ports")
        for port in sorted(os.listdir(ports)) if os.path.isdir(ports) else []:
            if read(os.path.join(ports, port, "gid_attrs/ndevs/0")) == iface:
                return device, int(port)
    try:
        mine = sorted(os.listdir("/sys/class/net/%s/device/infiniband" % iface))
    except OSError:
        return None
    for device in mine:
        dev_port = read("/sys/class/net/%s/dev_port" % iface) or "0"
        port = int(dev_port) + 1 if dev_port.isdigit() else 1
        if os.path.isdir(os.path.join(root, device, "ports", str(port))):
            return device, port
    return None


def port_problem(device, port):
    """rping's failure for a port that cannot carry RDMA now, or None."""
    base = "/sys/class/infiniband/%s/ports/%d/" % (device, port)
    state = read(base + "state")
    if not state.endswith("ACTIVE"):
        # No carrier on the IPoIB interface: address resolution (ARP) times out.
        return "cma event RDMA_CM_EVENT_ADDR_ERROR, error -110"
    if read(base + "link_layer") == "InfiniBand" and int(read(base + "sm_lid") or "0", 0) == 0:
        # Route resolution asks the subnet administrator for a path; there is none to ask.
        return "cma event RDMA_CM_EVENT_ROUTE_ERROR, error -110"
    return None


def fail(text, code=255):
    sys.stderr.write(text + "\n")
    sys.stderr.flush()
    sys.exit(code)


def bound_port(address, what, opts):
    """The interface owning `address` and its RDMA port, or rping's error for `what`."""
    iface = interface_of(address)
    if iface is None:
        fail("%s: Cannot assign requested address" % what)
    ref = rdma_port_of(iface)
    if ref is None:
        fail("%s: No such device" % what)
    debug(opts, "bound to %s (%s/%d)" % (iface, ref[0], ref[1]))
    return iface, ref


def payload(ping, start, size):
    text = "rdma-ping-%d: " % ping
    chars = []
    c = start
    for _ in range(len(text), size - 1):
        chars.append(chr(c))
        c = 65 if c >= 122 else c + 1
    return text + "".join(chars)


def lines_of(conn):
    pending = b""
    while True:
        try:
            chunk = conn.recv(65536)
        except OSError:
            return
        if not chunk:
            return
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            yield line.decode("ascii", "replace")


def serve(conn, opts):
    for line in lines_of(conn):
        if opts["verbose"]:
            print("server ping data: %s" % line, flush=True)
        try:
            conn.sendall((line + "\n").encode())
        except OSError:
            break
    conn.close()
    sys.stderr.write("server DISCONNECT EVENT...\n")


def server(opts):
    address = opts["addr"] or "0.0.0.0"
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if opts["addr"]:
        iface, _ = bound_port(address, "rdma_bind_addr", opts)
        listener.setsockopt(socket.SOL_SOCKET, SO_BINDTODEVICE, iface.encode())
    try:
        listener.bind((address, opts["port"]))
        listener.listen(3)
    except OSError as error:
        fail("rdma_bind_addr: %s" % os.strerror(error.errno or errno.EINVAL))
    debug(opts, "rdma_listen on %s:%d" % (address, opts["port"]))
    while True:
        conn, _ = listener.accept()
        if not opts["persistent"]:
            listener.close()
            serve(conn, opts)
            return 0
        if os.fork() == 0:
            listener.close()
            serve(conn, opts)
            os._exit(0)
        conn.close()


def client(opts):
    if not opts["addr"]:
        usage()
    dst = opts["addr"]
    src = opts["src"]
    if src is None:
        # rdma_resolve_addr without a source: the routing decision picks it.
        route = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            route.connect((dst, opts["port"]))
            src = route.getsockname()[0]
        except OSError:
            fail("cma event RDMA_CM_EVENT_ADDR_ERROR, error -101")
        finally:
            route.close()
    iface, (device, port) = bound_port(src, "rdma_resolve_addr", opts)
    problem = port_problem(device, port)
    if problem:
        fail(problem)
    conn = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    conn.setsockopt(socket.SOL_SOCKET, SO_BINDTODEVICE, iface.encode())
    conn.settimeout(CONNECT_TIMEOUT_S)
    try:
        conn.bind((src, 0))
        conn.connect((dst, opts["port"]))
    except socket.timeout:
        fail("cma event RDMA_CM_EVENT_UNREACHABLE, error -110")
    except OSError as error:
        events = {
            errno.ECONNREFUSED: "cma event RDMA_CM_EVENT_REJECTED, error 8",
            errno.EHOSTUNREACH: "cma event RDMA_CM_EVENT_ADDR_ERROR, error -110",
            errno.ENETUNREACH: "cma event RDMA_CM_EVENT_ADDR_ERROR, error -101",
        }
        fail(events.get(error.errno, "rdma_resolve_addr: %s" % os.strerror(error.errno or errno.EINVAL)))
    conn.settimeout(RESOLVE_TIMEOUT_S * 5)
    debug(opts, "rdma_connect successful")
    replies = lines_of(conn)
    ping, start = 0, 65
    while opts["count"] == 0 or ping < opts["count"]:
        data = payload(ping, start, opts["size"])
        start = 65 if start >= 122 else start + 1
        try:
            conn.sendall((data + "\n").encode())
            echoed = next(replies, None)
        except OSError:
            echoed = None
        if echoed != data:
            fail("wait for RDMA_WRITE_COMPLETE state %d" % 10)
        if opts["verbose"]:
            print("ping data: %s" % echoed, flush=True)
        ping += 1
    conn.close()
    return 0


def record(role, started):
    try:
        with open(RUNS_LOG, "a") as log:
            log.write("%s %d %.6f %.6f\n" % (role, os.getpid(), started, time.monotonic()))
    except OSError:
        pass


def main():
    started = time.monotonic()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    # Ended by verify's server script or by timeout: still a run that ends (and is recorded), with
    # the status a shell reports for SIGTERM.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        opts = parse(sys.argv[1:])
    except ValueError:
        usage()
    try:
        return server(opts) if opts["server"] else client(opts)
    except KeyboardInterrupt:
        return 130
    finally:
        record("server" if opts["server"] else "client", started)


if __name__ == "__main__":
    sys.exit(main())
