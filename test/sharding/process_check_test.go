package sharding

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// helperEnv makes the test binary, run as a child, behave as the process under test.
const helperEnv = "SHARDING_HELPER_PROCESS"

func TestHelperProcess(t *testing.T) {
	switch os.Getenv(helperEnv) {
	case "":
		t.Skip("only a child of the process tests")
	case "sleep":
		os.Stdout.WriteString("helper started\n")
		time.Sleep(time.Minute)
	case "dies-on-term":
		// No signal handler: SIGTERM kills it, so Wait reports "signal: terminated".
		time.Sleep(time.Minute)
	}
	os.Exit(0)
}

func startHelper(t *testing.T, mode string) *process {
	t.Helper()
	t.Setenv(helperEnv, mode)
	return startProcess(t, mode, filepath.Join(t.TempDir(), mode+".log"), os.Args[0], "-test.run=^TestHelperProcess$")
}

func TestProcessKillEndsTheChildAndCleanupKillsWhatIsLeft(t *testing.T) {
	var left *process
	t.Run("child", func(t *testing.T) {
		p := startHelper(t, "sleep")
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(p.tail(5), "helper started") && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if !strings.Contains(p.tail(5), "helper started") {
			t.Fatalf("no output from the helper: %q", p.tail(5))
		}
		if err := p.kill(); err != nil || p.running() {
			t.Fatalf("kill = %v, running %v", err, p.running())
		}
		if p.kill() == nil {
			t.Fatal("a second kill of an exited process reported success")
		}
		left = startHelper(t, "sleep") // left for t.Cleanup
	})
	if left.running() {
		t.Fatal("the subtest's Cleanup left its child running")
	}
}

func TestProcessStopReportsAnUncleanExit(t *testing.T) {
	p := startHelper(t, "dies-on-term")
	time.Sleep(300 * time.Millisecond)
	if err := p.stop(10 * time.Second); err == nil {
		t.Fatal("a child killed by SIGTERM (exit status nonzero) stopped cleanly")
	}
	if err := p.stop(time.Second); err == nil {
		t.Fatal("stop of an exited process reported success")
	}
}

func TestFreePortIsListenable(t *testing.T) {
	if p := freePort(t); p <= 0 || p > 65535 {
		t.Fatalf("port %d", p)
	}
}
