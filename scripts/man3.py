#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""man3.py: the API's man pages, one per group of functions, made from
include/zklock.h, which stays the one contract.

  python3 scripts/man3.py [--check]

Writes, in man/:
  zkl_<page>.3  one page per group below: the group's functions (SYNOPSIS),
                what include/zklock.h says of each, the group's types as
                the header declares them;
  zkl_<fn>.3    for every other exported function, a one-line ".so" link
                to its group's page, so that `man zkl_mutex_unlock` works;
  man3.am       the list of all of them, which Makefile.am includes.
With --check, writes nothing and exits 1 (naming the files) when what it
would write differs from what is there: tests/docs-api.sh runs that.

Every function the header declares must be in exactly one group, and must
have a comment above it: a function added to the header without either
makes this fail. The text is the header's own: a comment's paragraphs,
its "- " items as a list, its indented lines as they are.
"""
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(TOP, "include", "zklock.h")
MAN = os.path.join(TOP, "man")

# (page, what the NAME line says, functions, types, intro)
# intro: None, the header line that the group's introductory comment
# stands right above, or "text:..." for a few words of our own.
GROUPS = [
    ("zkl_client_create", "a ZooKeeper session shared by a process's locks",
     ["zkl_client_create", "zkl_client_destroy", "zkl_client_state",
      "zkl_client_session_id", "zkl_client_session_timeout",
      "zkl_client_wait_connected", "zkl_client_request_count",
      "zkl_client_fd", "zkl_client_dispatch"],
     ["zkl_client_options_t", "ZKL_CLIENT_DISPATCH", "ZKL_ACL_OPEN",
      "zkl_client_state_t", "zkl_log_level_t", "zkl_log_fn"],
     "text:A zkl_client_t owns one ZooKeeper session, shared by every lock "
     "and thread of the process. After the session expires it makes a new "
     "session for later work; holds made on the old one are LOST. Every "
     "other object is created on a client."),
    ("zkl_client_stats", "a client's counters, for monitoring",
     ["zkl_client_stats"],
     ["ZKL_STATS_MUTEX", "ZKL_STATS_OK", "ZKL_STATS_REQ_CREATE",
      "zkl_stats_histogram_t", "zkl_client_stats_t"],
     "/* Recipes: the first index of zkl_client_stats_t.acquires. */"),
    ("zkl_mutex_lock", "a reentrant distributed mutex",
     ["zkl_mutex_create", "zkl_mutex_destroy", "zkl_mutex_lock",
      "zkl_mutex_trylock", "zkl_mutex_timedlock", "zkl_mutex_unlock",
      "zkl_mutex_cancel", "zkl_mutex_verify", "zkl_mutex_state",
      "zkl_mutex_depth", "zkl_mutex_token", "zkl_mutex_node_path"],
     ["zkl_mutex_options_t", "ZKL_MUTEX_NO_NODE_WATCH", "zkl_lock_state_t",
      "zkl_state_fn"],
     "text:A zkl_mutex_t is a reentrant distributed mutex <root>/<name>, "
     "created on a client. Several zkl_mutex_t objects, in one or many "
     "processes, may name the same lock. A hold belongs to a thread: two "
     "threads of one process exclude each other as two processes do, only "
     "the thread that locked may unlock, and only a thread's first lock and "
     "its last unlock reach ZooKeeper."),
    ("zkl_rwlock_rdlock", "a reentrant distributed read-write lock",
     ["zkl_rwlock_create", "zkl_rwlock_destroy", "zkl_rwlock_rdlock",
      "zkl_rwlock_tryrdlock", "zkl_rwlock_timedrdlock", "zkl_rwlock_wrlock",
      "zkl_rwlock_trywrlock", "zkl_rwlock_timedwrlock", "zkl_rwlock_rdunlock",
      "zkl_rwlock_wrunlock", "zkl_rwlock_downgrade", "zkl_rwlock_cancel",
      "zkl_rwlock_verify", "zkl_rwlock_state", "zkl_rwlock_depth",
      "zkl_rwlock_token", "zkl_rwlock_node_path"],
     ["zkl_rwlock_options_t", "ZKL_RWLOCK_KAZOO", "zkl_rwlock_fn"],
     "typedef struct zkl_rwlock zkl_rwlock_t;"),
    ("zkl_semaphore_acquire", "a distributed counting semaphore and its leases",
     ["zkl_semaphore_create", "zkl_semaphore_acquire",
      "zkl_semaphore_tryacquire", "zkl_semaphore_timedacquire",
      "zkl_semaphore_cancel", "zkl_semaphore_destroy", "zkl_lease_release",
      "zkl_lease_state", "zkl_lease_token", "zkl_lease_verify",
      "zkl_lease_node_path"],
     ["zkl_semaphore_options_t", "zkl_semaphore_fn"],
     "typedef struct zkl_semaphore zkl_semaphore_t;"),
    ("zkl_mutex_lock_async", "acquire without a waiting thread",
     ["zkl_mutex_lock_async", "zkl_rwlock_rdlock_async",
      "zkl_rwlock_wrlock_async", "zkl_semaphore_acquire_async",
      "zkl_hold_cancel", "zkl_hold_release", "zkl_hold_release_async",
      "zkl_hold_state", "zkl_hold_token", "zkl_hold_verify",
      "zkl_hold_node_path"],
     ["zkl_hold_fn", "zkl_release_fn"],
     "typedef struct zkl_hold zkl_hold_t;"),
    ("zkl_election_join", "leader election",
     ["zkl_election_create", "zkl_election_join", "zkl_election_wait",
      "zkl_election_resign", "zkl_election_state", "zkl_election_verify",
      "zkl_election_is_leader", "zkl_election_token", "zkl_election_destroy",
      "zkl_election_candidates"],
     ["zkl_election_options_t", "ZKL_ELECTION_LOSE_ON_DISCONNECT",
      "zkl_election_fn"],
     "typedef struct zkl_election zkl_election_t;"),
    ("zkl_multilock_lock", "several locks held as one, without deadlock",
     ["zkl_multilock_create", "zkl_multilock_lock", "zkl_multilock_trylock",
      "zkl_multilock_timedlock", "zkl_multilock_lock_async",
      "zkl_multilock_unlock", "zkl_multilock_unlock_async",
      "zkl_multilock_cancel", "zkl_multilock_state", "zkl_multilock_token",
      "zkl_multilock_verify", "zkl_multilock_destroy"],
     ["zkl_multilock_member_t", "zkl_multilock_options_t",
      "zkl_multilock_fn", "zkl_multilock_done_fn"],
     "typedef struct zkl_multilock zkl_multilock_t;"),
    ("zkl_mutex_queue", "who holds, who waits, and the parents left behind",
     ["zkl_mutex_queue", "zkl_contenders_free", "zkl_locks_list",
      "zkl_locks_free", "zkl_sweep"],
     ["zkl_contender_t", "ZKL_MODE_EXCLUSIVE", "zkl_lock_info_t"],
     None),
    ("zkl_revoke", "ask the holders of a lock to give it up, or force them",
     ["zkl_revoke"], [], None),
    ("zkl_mutex_guarded", "writes that commit only while a hold is ours",
     ["zkl_mutex_guarded", "zkl_rwlock_guarded", "zkl_lease_guarded",
      "zkl_hold_guarded", "zkl_election_guarded", "zkl_multilock_guarded"],
     ["ZKL_OP_CREATE", "ZKL_CREATE_EPHEMERAL", "zkl_op_t",
      "ZKL_GUARD_RELEASE"],
     "/* Kinds of zkl_op_t. */"),
    ("zkl_strerror", "error codes, names, version, clock and checks",
     ["zkl_strerror", "zkl_err_name", "zkl_version", "zkl_now_ms",
      "zkl_name_check", "zkl_root_check", "zkl_lock_state_name"],
     [], None),
]

ERRORS_PAGE = "zkl_strerror"


def fail(msg):
    sys.stderr.write("man3.py: %s\n" % msg)
    sys.exit(2)


def read_header():
    with open(HEADER, encoding="utf-8") as f:
        return f.read().split("\n")


def comment_text(lines):
    """The text of a /* ... */ block, one string per line, without the
    comment's own marks and the one space after its stars."""
    out = []
    for i, l in enumerate(lines):
        l = l.rstrip()
        if i == 0:
            l = l[2:]
        if l.endswith("*/"):
            l = l[:-2].rstrip()
        l = re.sub(r"^ ?\* ?", "", l) if i > 0 else l.lstrip()
        out.append(l)
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return out


def parse(lines):
    """Top-level comment blocks and ZKL_EXTERN declarations, in order:
    ("comment", start, text lines) and ("decl", name, prototype, comment
    index). A declaration takes the last comment above it when only empty
    lines, typedefs of one statement and declarations right above it come
    between; else its comment index is None (undocumented)."""
    items, i, last = [], 0, None
    while i < len(lines):
        l = lines[i]
        if l.startswith("/*"):
            j = i
            while "*/" not in lines[j]:
                j += 1
            text = comment_text(lines[i:j + 1])
            banner = all(re.fullmatch(r"-*", t.strip()) for t in text) or \
                (j == i and lines[i - 1].startswith("/* ---"))
            if not banner:
                items.append(("comment", i, text))
                last = len(items) - 1
            else:
                last = None
            i = j + 1
            continue
        if l.startswith("ZKL_EXTERN "):
            j = i
            while not lines[j].rstrip().endswith(";"):
                j += 1
            proto = " ".join(x.strip() for x in lines[i:j + 1])
            proto = proto[len("ZKL_EXTERN "):]
            m = re.search(r"(zkl_[a-z0-9_]+)\(", proto)
            if not m:
                fail("cannot read the declaration at line %d" % (i + 1))
            items.append(("decl", m.group(1), proto, last))
            i = j + 1
            # declarations share a comment when they follow each other;
            # one after an empty line needs its own
            if i < len(lines) and not lines[i].strip():
                last = None
            continue
        if l.startswith("typedef ") and "{" not in l:  # one statement
            while not lines[i].rstrip().endswith(";"):
                i += 1
        elif l.strip():
            last = None  # code between: that comment is not this one's
        i += 1
    return items


def find_type(lines, key):
    """The header's text of a type: a typedef named key, or the anonymous
    enum that defines the constant key; with a one-line comment right
    above it."""
    start = end = None
    for i, l in enumerate(lines):
        if key.endswith("_t") or key.endswith("_fn"):
            if re.match(r"typedef .*\(\*%s\)\(" % re.escape(key), l):
                start = i
                end = i
                while not lines[end].rstrip().endswith(";"):
                    end += 1
                break
            if re.match(r"} %s;" % re.escape(key), l):
                end = i
                start = i
                while not re.match(r"typedef (struct|enum)", lines[start]):
                    start -= 1
                break
        elif l.startswith("enum {") and re.search(r"\b%s\b" % re.escape(key), l):
            start = end = i  # an enum on one line
            break
        elif re.match(r"\s+%s\b" % re.escape(key), l):
            start = end = i
            while not lines[start].startswith("enum {"):
                start -= 1
            while not lines[end].startswith("};"):
                end += 1
            break
    if start is None:
        fail("no type %s in the header" % key)
    if lines[start - 1].startswith("/*") and lines[start - 1].rstrip().endswith("*/"):
        start -= 1
    return lines[start:end + 1]


def intro_of(lines, items, anchor):
    if anchor is None:
        return None, None
    if anchor.startswith("text:"):
        return [anchor[5:]], None
    for idx, it in enumerate(items):
        if it[0] != "comment":
            continue
        # the comment block that ends right above the anchor line (blank
        # lines between)
        k = it[1]
        while "*/" not in lines[k]:
            k += 1
        k += 1
        while k < len(lines) and not lines[k].strip():
            k += 1
        if k < len(lines) and lines[k] == anchor:
            return it[2], idx
    fail("no comment right above %r" % anchor)


def esc(s):
    s = s.replace("\\", "\\e").replace("-", "\\-")
    return s


def inline(s):
    """Prose: escapes, then function names bold, constants bold, `words`
    in italics."""
    s = esc(s)
    s = re.sub(r"`([^`]+)`", r"\\fI\1\\fR", s)
    s = re.sub(r"\b(zkl_[a-z0-9_]+)\(\)", r"\\fB\1\\fR()", s)
    s = re.sub(r"\b(ZKL_[A-Z0-9_]+)\b", r"\\fB\1\\fR", s)
    return s


def line_start(s):
    return "\\&" + s if s[:1] in (".", "'") else s


def render_text(text):
    """Paragraphs of a comment as roff: filled text; "- " items as a
    list; lines indented under a paragraph's start kept as they are."""
    out, para, pre, item = [], [], [], None

    def flush_para():
        nonlocal para, item
        if item is not None:
            out.append(".IP \\(bu 2")
            out.append(line_start(inline(" ".join(item))))
            item = None
        if para:
            out.append(".PP")
            out.append(line_start(inline(" ".join(para))))
            para = []

    def flush_pre():
        nonlocal pre
        if pre:
            cut = min(len(p) - len(p.lstrip()) for p in pre)
            out.append(".RS 2")
            out.append(".nf")
            out.extend(line_start(esc(p[cut:])) for p in pre)
            out.append(".fi")
            out.append(".RE")
            pre = []

    for t in text:
        if not t.strip():
            flush_pre()
            flush_para()
            continue
        if t.startswith("- "):
            flush_pre()
            flush_para()
            item = [t[2:].strip()]
            continue
        if item is not None and t.startswith("  ") and not pre:
            item.append(t.strip())
            continue
        if t.startswith("  "):
            if item is not None:
                flush_para()
            if para:
                flush_para()
            pre.append(t)
            continue
        flush_pre()
        if item is not None:
            flush_para()
        para.append(t.strip())
    flush_pre()
    flush_para()
    return out


def proto_lines(proto, width=78):
    """A prototype as C is written: the name bold, the arguments wrapped
    under the first one when the line is too long."""
    m = re.match(r"(.*?)(zkl_[a-z0-9_]+)\((.*)\);$", proto)
    ret, name, args = m.group(1), m.group(2), m.group(3).split(", ")
    head = "%s%s(" % (ret, name)
    rows, cur = [], head
    for i, a in enumerate(args):
        piece = a + (", " if i < len(args) - 1 else ");")
        if len(cur) + len(piece.rstrip()) > width and cur.strip() != head.strip():
            rows.append(cur.rstrip())
            cur = " " * len(head)
        cur += piece
    rows.append(cur)
    out = []
    for i, r in enumerate(rows):
        if i == 0:
            r = esc(ret) + "\\fB" + name + "\\fR" + esc(r[len(ret) + len(name):])
        else:
            r = esc(r)
        out.append(line_start(r))
    return out


def errors_section(lines):
    """zklock's codes with their values and texts, then ZooKeeper's, from
    the header's two tables."""
    out = [".SH ERRORS",
           "zklock's own codes (\\fBzkl_error_t\\fR; never renumbered), "
           "with what \\fBzkl_strerror\\fR() says of each:"]
    for l in lines:
        m = re.match(r'\s*XX\((\w+), (-\d+), "([^"]*)"\)', l)
        if m:
            out += [".TP", "\\fBZKL_%s\\fR (%s)" % (m.group(1), esc(m.group(2))),
                    esc(m.group(3))]
    zk = []
    for l in lines:
        zk += ["\\fBZKL_%s\\fR (%s)" % (m.group(1), esc(m.group(2)))
               for m in re.finditer(r"XX\((Z[A-Z]+), (-\d+)\)", l)]
    out += [".PP",
            "ZooKeeper's codes, passed through unchanged, under names of "
            "zklock.h's (\\fBzkl_zk_error_t\\fR), so that a program needs "
            "no \\fIzookeeper.h\\fR; each has the value of "
            "\\fIzookeeper.h\\fR's code of the same name without "
            "\\fBZKL_\\fR: " + ", ".join(zk) + "."]
    return out


def page(group, lines, items, decls, version, date):
    name, what, fns, types, anchor = group
    intro, intro_idx = intro_of(lines, items, anchor)
    out = [".\\\" SPDX-License-Identifier: Apache-2.0",
           ".\\\" Made by scripts/man3.py from include/zklock.h: edit those.",
           '.TH %s 3 "%s" "zklock %s" "Library Functions"' %
           (name.upper(), date, version), ".SH NAME",
           "%s \\- %s" % (", ".join(esc(f) for f in fns), esc(what)),
           ".SH SYNOPSIS", ".nf", ".B #include <zklock.h>", ".PP"]
    for f in fns:
        out += proto_lines(decls[f][0])
    out += [".fi", ".PP",
            "Link with \\fB\\-lzklock\\fR (\\fBpkg\\-config \\-\\-libs zklock\\fR).",
            ".SH DESCRIPTION"]
    if intro:
        out += render_text(intro)
    done = set()
    for f in fns:
        proto, cidx = decls[f]
        if cidx in done:
            continue
        done.add(cidx)
        shared = [g for g in fns if decls[g][1] == cidx]
        out.append(".SS %s" % ", ".join("%s()" % esc(g) for g in shared))
        if cidx == intro_idx:
            out.append("See above.")
            continue
        out += render_text(items[cidx][2])
    out += [".PP",
            "Words in capitals such as TIME, CALLBACKS or MEMORY name the "
            "parts of the comment that opens \\fI<zklock.h>\\fR, which "
            "\\fBzklock\\fR(3) restates."]
    if types:
        out += [".SH TYPES", "As \\fI<zklock.h>\\fR declares them:", ".PP",
                ".RS", ".nf"]
        for i, t in enumerate(types):
            if i:
                out.append("")
            out += [line_start(esc(l)) for l in find_type(lines, t)]
        out += [".fi", ".RE"]
    if name == ERRORS_PAGE:
        out += errors_section(lines)
    out += [".SH SEE ALSO", ".BR zklock (3),"]
    others = [g[0] for g in GROUPS if g[0] != name]
    for i, o in enumerate(others):
        out.append(".BR %s (3)%s" % (esc(o), "," if i < len(others) - 1 else ""))
    return "\n".join(out) + "\n"


def main():
    check = "--check" in sys.argv[1:]
    lines = read_header()
    items = parse(lines)
    decls = {}
    for it in items:
        if it[0] == "decl":
            if it[3] is None:
                fail("%s has no comment above it" % it[1])
            decls[it[1]] = (it[2], it[3])
    grouped = [f for g in GROUPS for f in g[2]]
    for f in grouped:
        if f not in decls:
            fail("%s is in a group but not declared in the header" % f)
        if grouped.count(f) > 1:
            fail("%s is in two groups" % f)
    missing = sorted(set(decls) - set(grouped))
    if missing:
        fail("not in any group (add them to GROUPS): %s" % " ".join(missing))
    with open(os.path.join(TOP, "configure.ac"), encoding="utf-8") as f:
        version = re.search(r"AC_INIT\(\[zklock\], \[([^]]*)\]", f.read()).group(1)
    with open(os.path.join(MAN, "zklock.3"), encoding="utf-8") as f:
        date = re.search(r'^\.TH ZKLOCK 3 "([^"]*)"', f.read(), re.M).group(1)
    files = {}
    for g in GROUPS:
        files[g[0] + ".3"] = page(g, lines, items, decls, version, date)
        for f in g[2]:
            if f != g[0]:
                files[f + ".3"] = ".so man3/%s.3\n" % g[0]
    names = sorted(files)
    am = ["# SPDX-License-Identifier: Apache-2.0",
          "# Made by scripts/man3.py from include/zklock.h: the API's man",
          "# pages, one per group of functions, and a .so link for each other",
          "# function (zklock.3 is written by hand).",
          "ZKL_MAN3 = \\"]
    am += ["\tman/%s%s" % (n, " \\" if i < len(names) - 1 else "")
           for i, n in enumerate(names)]
    files["man3.am"] = "\n".join(am) + "\n"
    stale = []
    for n, text in sorted(files.items()):
        path = os.path.join(MAN, n)
        try:
            with open(path, encoding="utf-8") as f:
                same = f.read() == text
        except FileNotFoundError:
            same = False
        if same:
            continue
        stale.append("man/" + n)
        if not check:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
    # pages of functions no longer declared
    for n in os.listdir(MAN):
        if n.startswith("zkl_") and n.endswith(".3") and n not in files:
            stale.append("man/" + n + " (to remove)")
            if not check:
                os.remove(os.path.join(MAN, n))
    if check and stale:
        print("man3: out of date (run python3 scripts/man3.py): " + " ".join(stale))
        sys.exit(1)
    if not check:
        print("man3: %d pages and links, %d written" % (len(files) - 1, len(stale)))


if __name__ == "__main__":
    main()
