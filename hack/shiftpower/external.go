package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
)

// external is a detector run as a command (through sh -c): it reads one JSON object per look
// on its standard input, {"values": [...]}, and answers with one line, {"changes": [...]}, the
// indices of the change points it shows. hack/otava.sh runs Apache Otava so. Looks taken at
// once each get a process of their own, kept for the looks after.
type external struct {
	command string
	mu      sync.Mutex
	idle    []*process
	all     []*process
}

type process struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func (e *external) changes(x []float64) []int {
	p := e.take()
	defer e.give(p)
	request, err := json.Marshal(map[string][]float64{"values": x})
	if err != nil {
		fail(err)
	}
	if _, err := p.in.Write(append(request, '\n')); err != nil {
		fail(fmt.Errorf("%s: %w", e.command, err))
	}
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		fail(fmt.Errorf("%s: %w", e.command, err))
	}
	var answer struct {
		Changes []int `json:"changes"`
	}
	if err := json.Unmarshal(line, &answer); err != nil {
		fail(fmt.Errorf("%s answered %q: %w", e.command, line, err))
	}
	return answer.Changes
}

func (e *external) take() *process {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n := len(e.idle); n > 0 {
		p := e.idle[n-1]
		e.idle = e.idle[:n-1]
		return p
	}
	cmd := exec.Command("sh", "-c", e.command)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		fail(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		fail(err)
	}
	if err := cmd.Start(); err != nil {
		fail(fmt.Errorf("%s: %w", e.command, err))
	}
	p := &process{cmd: cmd, in: in, out: bufio.NewReader(out)}
	e.all = append(e.all, p)
	return p
}

func (e *external) give(p *process) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.idle = append(e.idle, p)
}

// stop ends the processes: each exits at the end of its input.
func (e *external) stop() {
	for _, p := range e.all {
		_ = p.in.Close() // the process sees its input end; its exit says the rest
		if err := p.cmd.Wait(); err != nil {
			fail(fmt.Errorf("%s: %w", e.command, err))
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "shiftpower:", err)
	os.Exit(1)
}
