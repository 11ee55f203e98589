// Package cpucost measures what a unit of work (a view build, a read, a write mode, a load)
// costs the CouchDB server in CPU time: the time every process of the server ran (Erlang's VM
// and the query-server processes it starts: couchjs, couchpy, ...), read from the accounting
// of the cgroup that holds them, before and after the unit. The kernel charges a cgroup for
// every process in it and every process those start, in nanoseconds as they run, whatever
// else runs on the machine: CPU time moves with the work the server does, where wall time
// also moves with the CPU it could get.
//
// A server's cgroup is the container's own in Kubernetes (its /sys/fs/cgroup, read from
// inside the container through a Session), or one made for it on a machine where it runs as
// plain processes (Adopt). Tree reads the same processes' time from /proc instead, as a reading independent
// of the cgroup's.
package cpucost

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Usage is the CPU time a server has used so far, read at At.
type Usage struct {
	At  time.Time
	CPU time.Duration
}

// Meter reads the CPU time a server has used so far: one node's (a Cgroup, a Tree), or
// several's summed, which a meter says by a method Nodes() int (podcpu.Meter: each pod of a
// cluster).
type Meter interface {
	Read() (Usage, error)
}

// Spent is what the server spent between two readings: CPU time, over Wall.
type Spent struct {
	CPU  time.Duration
	Wall time.Duration
}

// Between is what was spent from reading a to reading b.
func Between(a, b Usage) Spent {
	return Spent{CPU: b.CPU - a.CPU, Wall: b.At.Sub(a.At)}
}

// PerThousand is the CPU-seconds spent per 1,000 of n (documents, rows, requests).
func (s Spent) PerThousand(n int64) float64 {
	if n <= 0 {
		return 0
	}
	return s.CPU.Seconds() * 1000 / float64(n)
}

// The accounting files: cgroup v2's cpu.stat (usage_usec, microseconds) and cgroup v1's
// cpuacct.usage (nanoseconds) of the cpuacct controller, which v1 mounts on its own or joined
// with cpu.
const (
	v2Stat  = "cpu.stat"
	v1Usage = "cpuacct.usage"
)

var v1Mounts = []string{"cpuacct", "cpu,cpuacct", "cpuacct,cpu"}

// ParseUsage reads the CPU time from the content of a cgroup's accounting file, either
// version's: v2's cpu.stat (its usage_usec line) or v1's cpuacct.usage (one number, in
// nanoseconds).
func ParseUsage(data []byte) (time.Duration, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "usage_usec" {
			us, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("cpu.stat usage_usec %q: %w", f[1], err)
			}
			return time.Duration(us) * time.Microsecond, nil
		}
	}
	f := strings.Fields(string(data))
	if len(f) != 1 {
		return 0, fmt.Errorf("no CPU usage in %q: want cgroup v2's cpu.stat or v1's cpuacct.usage", truncate(data))
	}
	ns, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cpuacct.usage %q: %w", f[0], err)
	}
	return time.Duration(ns), nil
}

func truncate(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// ContainerReader is a command to start once in a container (through pods/exec, its stdin
// open) that reads the container's own CPU accounting from inside it whenever asked: each line
// it reads it answers with the first line of the accounting file, which ParseUsage reads. A
// container sees its own cgroup at /sys/fs/cgroup (v2, with its cgroup namespace) or under
// /sys/fs/cgroup/cpuacct (v1, its own directory mounted there). The loop uses the shell's
// builtins only, so that a reading costs the container about a tenth of a millisecond: an
// exec per reading would start a process in the container each time (runc's init among
// them) and answer a second or more late on a busy node.
var ContainerReader = []string{"sh", "-c", containerScript()}

func containerScript() string {
	script := "f=/sys/fs/cgroup/" + v2Stat
	for _, m := range v1Mounts {
		f := "/sys/fs/cgroup/" + m + "/" + v1Usage
		script += "; [ -r $f ] || f=" + f
	}
	return script + `; while read -r _; do read -r a b < $f; echo "$a $b"; done`
}

// Session reads a container's CPU time through a ContainerReader kept running: its stdin and
// stdout.
type Session struct {
	ask    io.Writer
	answer *bufio.Reader
}

// NewSession reads through a ContainerReader's stdin and stdout.
func NewSession(stdin io.Writer, stdout io.Reader) *Session {
	return &Session{ask: stdin, answer: bufio.NewReader(stdout)}
}

// Read is the container's CPU time now.
func (s *Session) Read() (Usage, error) {
	if _, err := io.WriteString(s.ask, "\n"); err != nil {
		return Usage{}, fmt.Errorf("asking the container's reader: %w", err)
	}
	line, err := s.answer.ReadString('\n')
	at := time.Now()
	if err != nil {
		return Usage{}, fmt.Errorf("the container's reader: %w", err)
	}
	cpu, err := ParseUsage([]byte(line))
	if err != nil {
		return Usage{}, err
	}
	return Usage{At: at, CPU: cpu}, nil
}

// Cgroup is a cgroup's CPU accounting.
type Cgroup struct {
	// File is the accounting file: Dir/cpu.stat (v2) or Dir/cpuacct.usage (v1).
	File string
}

// OpenCgroup is the accounting of the cgroup directory dir, of either version.
func OpenCgroup(dir string) (Cgroup, error) {
	for _, name := range []string{v2Stat, v1Usage} {
		f := filepath.Join(dir, name)
		if _, err := os.Stat(f); err == nil {
			return Cgroup{File: f}, nil
		}
	}
	return Cgroup{}, fmt.Errorf("%s holds neither %s (cgroup v2) nor %s (v1): not a cgroup with CPU accounting", dir, v2Stat, v1Usage)
}

// Read is the cgroup's CPU time now.
func (g Cgroup) Read() (Usage, error) {
	data, err := os.ReadFile(g.File)
	at := time.Now()
	if err != nil {
		return Usage{}, err
	}
	cpu, err := ParseUsage(data)
	if err != nil {
		return Usage{}, fmt.Errorf("%s: %w", g.File, err)
	}
	return Usage{At: at, CPU: cpu}, nil
}

// Dir is the cgroup's directory.
func (g Cgroup) Dir() string { return filepath.Dir(g.File) }

// hierarchy is where a machine's cgroup file system keeps CPU accounting: /sys/fs/cgroup
// itself under cgroup v2 (its root holds cgroup.controllers), else v1's cpuacct controller.
type hierarchy struct {
	dir string
	v2  bool
}

func hierarchyAt(root string) (hierarchy, error) {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return hierarchy{dir: root, v2: true}, nil
	}
	for _, m := range v1Mounts {
		if _, err := os.Stat(filepath.Join(root, m, v1Usage)); err == nil {
			return hierarchy{dir: filepath.Join(root, m)}, nil
		}
	}
	return hierarchy{}, fmt.Errorf("%s holds neither a cgroup v2 hierarchy nor v1's cpuacct controller", root)
}

// Adopt moves the process pid and all its descendants into a cgroup of their own,
// couchbench/name under the machine's CPU accounting hierarchy (made when missing): a server
// that runs as plain processes (the kit's CouchDB) then has a cgroup that also takes every
// process it starts later. A cgroup without limits changes nothing about how its processes
// are scheduled. Adopt returns the cgroup and restore, which moves every process in it back
// to where pid was and removes it (and couchbench/ once empty). Moving processes needs root.
func Adopt(name string, pid int) (g Cgroup, restore func() error, err error) {
	h, err := hierarchyAt("/sys/fs/cgroup")
	if err != nil {
		return Cgroup{}, nil, err
	}
	from, err := h.cgroupOf(pid)
	if err != nil {
		return Cgroup{}, nil, err
	}
	dir := filepath.Join(h.dir, "couchbench", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Cgroup{}, nil, fmt.Errorf("making the cgroup %s: %w", dir, err)
	}
	if g, err = OpenCgroup(dir); err != nil {
		return Cgroup{}, nil, err
	}
	restore = func() error {
		if err := moveAll(dir, from); err != nil {
			return err
		}
		if err := os.Remove(dir); err != nil {
			return err
		}
		// The parent goes too once no other server's cgroup is in it.
		if err := os.Remove(filepath.Dir(dir)); err != nil && !errors.Is(err, syscall.EBUSY) && !errors.Is(err, syscall.ENOTEMPTY) {
			return err
		}
		return nil
	}
	// A process forked while the tree is moved may have been left out of the listing: look
	// again until every process of the tree is in.
	for range 10 {
		moved, err := moveTree(dir, pid)
		if err != nil {
			return g, restore, errors.Join(err, restore())
		}
		if moved == 0 {
			return g, restore, nil
		}
	}
	return g, restore, errors.Join(fmt.Errorf("the process tree of %d kept forking while it was moved into %s", pid, dir), restore())
}

// cgroupOf is the directory of the cgroup in h that holds pid.
func (h hierarchy) cgroupOf(pid int) (string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		// hierarchy-ID:controllers:path; v2's has no controllers.
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if h.v2 && parts[0] == "0" || !h.v2 && strings.Contains(","+parts[1]+",", ",cpuacct,") {
			return filepath.Join(h.dir, parts[2]), nil
		}
	}
	return "", fmt.Errorf("process %d: no cgroup under %s in /proc/%d/cgroup", pid, h.dir, pid)
}

// moveTree moves pid and its descendants that are not in dir yet, and says how many.
func moveTree(dir string, pid int) (int, error) {
	in, err := procsOf(dir)
	if err != nil {
		return 0, err
	}
	tree, err := descendants(pid)
	if err != nil {
		return 0, err
	}
	moved := 0
	for _, p := range tree {
		if in[p] {
			continue
		}
		if err := moveProcess(dir, p); err != nil {
			if errors.Is(err, syscall.ESRCH) {
				continue // it exited meanwhile
			}
			return moved, err
		}
		moved++
	}
	return moved, nil
}

func moveProcess(dir string, pid int) error {
	if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("moving process %d into %s: %w", pid, dir, err)
	}
	return nil
}

// moveAll moves every process of the cgroup from into the cgroup to.
func moveAll(from, to string) error {
	in, err := procsOf(from)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for p := range in {
		if err := moveProcess(to, p); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func procsOf(dir string) (map[int]bool, error) {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	in := map[int]bool{}
	for f := range strings.FieldsSeq(string(data)) {
		if p, err := strconv.Atoi(f); err == nil {
			in[p] = true
		}
	}
	return in, nil
}
