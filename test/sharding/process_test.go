package sharding

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// process is a child process of the test, its output in a file. t.Cleanup kills it, so
// a failing test leaves nothing running.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error // Wait's, once done is closed
}

// startProcess starts binary with args, stdout and stderr appended to logPath.
func startProcess(t *testing.T, name, logPath, binary string, args ...string) *process {
	t.Helper()
	out, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = out.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		if p.kill() == nil && t.Failed() {
			t.Logf("%s's last output:\n%s", name, p.tail(40))
		}
	})
	return p
}

// running reports whether the process has not exited.
func (p *process) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL, as a crash or the OOM killer would, and waits for the exit.
func (p *process) kill() error {
	if !p.running() {
		return errors.New("not running")
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	return nil
}

// stop sends SIGTERM and waits up to timeout for a clean exit, then kills.
func (p *process) stop(timeout time.Duration) error {
	if !p.running() {
		return fmt.Errorf("%s had already exited: %v", p.name, p.err)
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			return fmt.Errorf("%s exited after SIGTERM: %w", p.name, p.err)
		}
		return nil
	case <-time.After(timeout):
		_ = p.kill()
		return fmt.Errorf("%s did not exit within %v of SIGTERM; killed", p.name, timeout)
	}
}

// tail returns the last n lines of the process's output.
func (p *process) tail(n int) string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// freePort returns a TCP port of 127.0.0.1 nobody listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}

// httpStatus returns the status code of GET url, 0 when it cannot connect.
func httpStatus(ctx context.Context, url string) int {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}
