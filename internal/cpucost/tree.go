package cpucost

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Tree reads the CPU time of the process Root and its descendants from /proc, a reading
// independent of the cgroup's accounting: the run time of every live thread (schedstat, in
// nanoseconds) and what each process's reaped children used (stat's cutime and cstime, in
// clock ticks of 10 ms). A thread or process that ended and was reaped by one outside the
// tree is lost, so Tree is a check on a cgroup, not a replacement for it.
type Tree struct {
	Root int
}

// clockTick is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// Read is the tree's CPU time now.
func (t Tree) Read() (Usage, error) {
	pids, err := descendants(t.Root)
	if err != nil {
		return Usage{}, err
	}
	var cpu time.Duration
	for _, p := range pids {
		c, err := processCPU(p)
		if err != nil {
			if p == t.Root {
				return Usage{}, err
			}
			continue // it ended between the listing and now
		}
		cpu += c
	}
	return Usage{At: time.Now(), CPU: cpu}, nil
}

// processCPU is a process's live threads' run time plus its reaped children's CPU time.
func processCPU(pid int) (time.Duration, error) {
	stat, err := readStat(pid)
	if err != nil {
		return 0, err
	}
	cutime, err1 := strconv.ParseInt(stat.fields[13], 10, 64)
	cstime, err2 := strconv.ParseInt(stat.fields[14], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: cutime %q, cstime %q", pid, stat.fields[13], stat.fields[14])
	}
	cpu := time.Duration(cutime+cstime) * clockTick
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, err
	}
	for _, task := range tasks {
		data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", task.Name(), "schedstat"))
		if err != nil {
			continue // the thread ended
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			continue
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/task/%s/schedstat %q: %w", pid, task.Name(), data, err)
		}
		cpu += time.Duration(ns)
	}
	return cpu, nil
}

// procStat is /proc/<pid>/stat: fields[0] is the state, the third field of the file, so the
// file's field k (1-based, as proc(5) counts) is fields[k-3].
type procStat struct {
	fields []string
}

func (s procStat) ppid() int {
	p, _ := strconv.Atoi(s.fields[1])
	return p
}

func readStat(pid int) (procStat, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name is in parentheses and may hold spaces and parentheses itself.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %d fields after the name", pid, len(f))
	}
	return procStat{fields: f}, nil
}

// descendants is pid and every process below it.
func descendants(pid int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		s, err := readStat(p)
		if err != nil {
			continue
		}
		children[s.ppid()] = append(children[s.ppid()], p)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		return nil, fmt.Errorf("process %d: %w", pid, err)
	}
	tree := []int{pid}
	for i := 0; i < len(tree); i++ {
		tree = append(tree, children[tree[i]]...)
	}
	return tree, nil
}
