package podcpu

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/remotecommand"
)

// These tests put a local shell where pods/exec would be: each "pod" is a shell loop that
// answers every line with the first line of an accounting file of the test's own (the
// format of cgroup v2's cpu.stat), as cpucost.ContainerReader answers with the container's.
// No Kubernetes API or CouchDB is involved; hack/cpucost/kind.sh and e2e run the real exec.

// shells execs, for each pod, its script in sh.
func shells(scripts map[string]string) execFunc {
	return func(ctx context.Context, pod string, opts remotecommand.StreamOptions) error {
		script, ok := scripts[pod]
		if !ok {
			return fmt.Errorf("pods %q not found", pod)
		}
		cmd := exec.CommandContext(ctx, "sh", "-c", script)
		cmd.Stdout, cmd.Stderr = opts.Stdout, opts.Stderr
		// As an exec's stream does, the command's end ends the exec, whatever its stdin.
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		go func() { _, _ = io.Copy(stdin, opts.Stdin); _ = stdin.Close() }()
		return cmd.Run()
	}
}

// accounting writes a cpu.stat that says usec microseconds, and returns the loop that reads it.
func accounting(t *testing.T, usec int) (file, script string) {
	t.Helper()
	file = filepath.Join(t.TempDir(), "cpu.stat")
	setUsage(t, file, usec)
	return file, `while read -r _; do read -r a b < ` + file + `; echo "$a $b"; done`
}

func setUsage(t *testing.T, file string, usec int) {
	t.Helper()
	if err := os.WriteFile(file, fmt.Appendf(nil, "usage_usec %d\nuser_usec 0\n", usec), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A CouchDB's pods are read one by one and summed, at every reading.
func TestReadSumsThePods(t *testing.T) {
	f0, s0 := accounting(t, 1_000_000)
	_, s1 := accounting(t, 2_500_000)
	m, err := open(context.Background(), shells(map[string]string{"db-0": s0, "db-1": s1}), []string{"db-0", "db-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	first, err := m.Read()
	if err != nil || first.CPU != 3500*time.Millisecond || m.Nodes() != 2 {
		t.Fatalf("first reading %+v, %v, nodes %d; want 3.5 s of two pods", first, err, m.Nodes())
	}
	setUsage(t, f0, 1_250_000)
	second, err := m.Read()
	if err != nil || second.CPU-first.CPU != 250*time.Millisecond || !second.At.After(first.At) {
		t.Errorf("second reading %+v, %v; want 0.25 s more, later", second, err)
	}
}

// A runner that may not exec, a pod without the reader's shell or file, and an exec that
// dies mid-run each end the meter with an error that names the pod and says why.
func TestReadingErrorsNameThePodAndTheCause(t *testing.T) {
	_, ok := accounting(t, 1)
	for _, c := range []struct {
		name   string
		script string
		opened bool
		says   []string
	}{
		{"not allowed", "", false, []string{"pod db-1", `pods "db-1" not found`}},
		{"no accounting", "read -r _; echo 'cannot open /sys/fs/cgroup/cpu.stat' >&2; exit 2", false,
			[]string{"pod db-1", "exit status 2", "cannot open /sys/fs/cgroup/cpu.stat"}},
		{"dies mid-run", "read -r _; echo 'usage_usec 5'; read -r _; echo lost >&2; exit 3", true,
			[]string{"pod db-1", "exit status 3", "lost"}},
	} {
		scripts := map[string]string{"db-0": ok}
		if c.script != "" {
			scripts["db-1"] = c.script
		}
		m, err := open(context.Background(), shells(scripts), []string{"db-0", "db-1"})
		if c.opened {
			if err != nil {
				t.Fatalf("%s: Open: %v", c.name, err)
			}
			_, err = m.Read()
			m.Close()
		}
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, want := range c.says {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", c.name, err, want)
			}
		}
	}
}

// A stream that stops answering is cut after readWait rather than left to hang the build,
// and Close returns from a reader that ignores its closed stdin. Nothing here is timed: a
// hang ends the test at its timeout.
func TestSilentReaderIsCutAndClosed(t *testing.T) {
	defer func(r, c time.Duration) { readWait, closeWait = r, c }(readWait, closeWait)
	readWait, closeWait = 200*time.Millisecond, 200*time.Millisecond
	_, ok := accounting(t, 1)
	stuck := "read -r _; echo 'usage_usec 1'; trap '' HUP; exec sleep 60"
	m, err := open(context.Background(), shells(map[string]string{"db-0": ok, "db-1": stuck}), []string{"db-0", "db-1"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Read()
	if err == nil || !strings.Contains(err.Error(), "pod db-1") || !strings.Contains(err.Error(), "no answer within 200ms") {
		t.Errorf("reading a silent pod: %v; want it cut, naming the pod", err)
	}
	// Close returns although the reader ignores its closed stdin: the exec is cancelled. A
	// Close that waited for the sleep would hold the test until its own timeout.
	m.Close()
}

// A stream that neither ends on its cancelled context nor moves (stuck in a write into its
// stdin, or read but never answering) still lets a reading end after readWait and Close
// return: the meter cuts its own pipes rather than wait on the exec.
func TestStreamDeafToCancelIsCutAndClosed(t *testing.T) {
	defer func(r, c time.Duration) { readWait, closeWait = r, c }(readWait, closeWait)
	readWait, closeWait = 200*time.Millisecond, 200*time.Millisecond
	_, ok := accounting(t, 1)
	released := make(chan struct{})
	defer close(released)
	for _, c := range []struct {
		name string
		// after is what the stuck stream does once it has answered the first reading.
		after func(stdin *bufio.Reader)
	}{
		{"stdin never read", func(*bufio.Reader) {}},
		{"asked, never answering", func(stdin *bufio.Reader) { _, _ = stdin.ReadString('\n') }},
	} {
		stuck := func(ctx context.Context, pod string, opts remotecommand.StreamOptions) error {
			if pod == "db-0" {
				return shells(map[string]string{"db-0": ok})(ctx, pod, opts)
			}
			stdin := bufio.NewReader(opts.Stdin)
			if _, err := stdin.ReadString('\n'); err != nil {
				return err
			}
			if _, err := io.WriteString(opts.Stdout, "usage_usec 1\n"); err != nil {
				return err
			}
			c.after(stdin)
			<-released
			return nil
		}
		m, err := open(context.Background(), stuck, []string{"db-0", "db-1"})
		if err != nil {
			t.Fatalf("%s: Open: %v", c.name, err)
		}
		_, err = m.Read()
		if err == nil || !strings.Contains(err.Error(), "pod db-1") || !strings.Contains(err.Error(), "no answer within 200ms") {
			t.Errorf("%s: reading %v; want it cut, naming the pod", c.name, err)
		}
		m.Close()
	}
}
