//go:build sharding

package sharding

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// The demo manager, built once per run of the package.
var (
	buildOnce   sync.Once
	buildBinary string
	buildErr    error
)

// managerBinary returns $MANAGER_BINARY, or builds ./cmd into a temporary directory
// (removed by TestMain) once.
func managerBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if bin := os.Getenv("MANAGER_BINARY"); bin != "" { // make test-e2e built it
			buildBinary = bin
			return
		}
		start := time.Now()
		if buildDir, buildErr = os.MkdirTemp("", "sharding-manager-"); buildErr != nil {
			return
		}
		buildBinary = filepath.Join(buildDir, "manager")
		cmd := exec.Command("go", "build", "-o", buildBinary, "./cmd")
		cmd.Dir = projectRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd: %w\n%s", err, out)
			return
		}
		t.Logf("built the manager in %v", time.Since(start).Round(time.Millisecond))
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return buildBinary
}

var buildDir string // created by managerBinary, removed by TestMain

func TestMain(m *testing.M) {
	logf.SetLogger(logr.Discard()) // the in-process caches of the uid test
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// requireFlags fails the test at once when the manager lacks one of flags (its -help
// does not list them), instead of letting every replica exit on an unknown flag.
func requireFlags(t *testing.T, binary string, flags ...string) {
	t.Helper()
	out, _ := exec.Command(binary, "-help").CombinedOutput() // exits 0 or 2 after the usage
	for _, f := range flags {
		if !strings.Contains(string(out), "-"+f+" ") && !strings.Contains(string(out), "-"+f+"\n") {
			t.Fatalf("the demo manager %s has no --%s flag (namespace sharding of the demo operator, "+
				"branch s3-ns-shard, is required)", binary, f)
		}
	}
}

// managerFlags are the flags of namespace sharding the suite passes.
var managerFlags = []string{"reconcile-log", "shard-identity", "shard-ring", "shard-lease-namespace", "shard-lease-duration"}

// The ring of the managers under test.
const (
	ringName       = "deltacache-demo"
	leaseNamespace = "deltacache-shard"
	leaseDuration  = 6 * time.Second
	// renewInterval is the managers' ring round (shard.Options.RenewInterval's
	// default, a fifth of the Lease): the survivors see a killed replica's Lease
	// expired at their first round after it expired, up to a round later.
	renewInterval = leaseDuration / 5
)

// manager is one demo manager process.
type manager struct {
	identity     string // "" for an unsharded manager
	proc         *process
	metricsURL   string
	readyURL     string
	reconcileLog string
	started      time.Time
}

// startManager starts the demo manager against cp. A non-empty identity enables
// sharding (--shard-identity); reconcileLog, when not "", is its --reconcile-log.
func startManager(t *testing.T, cp *controlPlane, dir, name, identity, reconcileLog string) *manager {
	t.Helper()
	metricsPort, probePort := freePort(t), freePort(t)
	args := []string{
		"--kubeconfig=" + cp.kubeconfig, "--local-control-plane=false",
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", metricsPort), "--metrics-secure=false",
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", probePort),
		"--zap-devel=false", "--zap-log-level=info",
	}
	if identity != "" {
		args = append(args, "--shard-identity="+identity, "--shard-ring="+ringName,
			"--shard-lease-namespace="+leaseNamespace, "--shard-lease-duration="+leaseDuration.String())
	}
	if reconcileLog != "" {
		args = append(args, "--reconcile-log="+reconcileLog)
	}
	m := &manager{
		identity:     identity,
		metricsURL:   fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort),
		readyURL:     fmt.Sprintf("http://127.0.0.1:%d/readyz", probePort),
		reconcileLog: reconcileLog,
		started:      time.Now(),
	}
	binary := managerBinary(t)
	requireFlags(t, binary, managerFlags...)
	m.proc = startProcess(t, name, filepath.Join(dir, name+".log"), binary, args...)
	return m
}

// managerState is what a manager's /metrics and /readyz say.
type managerState struct {
	ready         bool
	pods, apps    int     // deltacache_informer_objects of Pod and App, every shape
	serving       int     // deltacache_shard_slots{state=serving}
	members       int     // deltacache_shard_members
	receivedBytes float64 // deltacache_apiserver_received_bytes_total, every series
	hasBytes      bool    // the process exports it
	acquired      int     // deltacache_shard_handoffs_total{direction=acquired}
	released      int     // deltacache_shard_handoffs_total{direction=released}
	podLists      int     // deltacache_informer_list_requests_total{kind=Pod}
	podFiltered   int     // deltacache_informer_shard_filtered_objects_total{kind=Pod}: dropped on the client
}

func (s managerState) String() string {
	return fmt.Sprintf("ready %v, pods %d, apps %d, serving %d slots, %d members, %.0f bytes received",
		s.ready, s.pods, s.apps, s.serving, s.members, s.receivedBytes)
}

// state scrapes m; an error when it is not running or does not answer.
func (m *manager) state(ctx context.Context) (managerState, error) {
	if !m.proc.running() {
		return managerState{}, fmt.Errorf("%s exited: %v", m.proc.name, m.proc.err)
	}
	fams, err := scrapeMetrics(ctx, m.metricsURL)
	if err != nil {
		return managerState{}, err
	}
	var s managerState
	s.ready = httpStatus(ctx, m.readyURL) == 200
	pods, _ := fams.sum("deltacache_informer_objects", map[string]string{"kind": "Pod"})
	apps, _ := fams.sum("deltacache_informer_objects", map[string]string{"kind": "App"})
	serving, _ := fams.sum("deltacache_shard_slots", map[string]string{"state": "serving"})
	members, _ := fams.sum("deltacache_shard_members", nil)
	s.pods, s.apps, s.serving, s.members = int(pods), int(apps), int(serving), int(members)
	acquired, _ := fams.sum("deltacache_shard_handoffs_total", map[string]string{"direction": "acquired"})
	released, _ := fams.sum("deltacache_shard_handoffs_total", map[string]string{"direction": "released"})
	s.acquired, s.released = int(acquired), int(released)
	podLists, _ := fams.sum("deltacache_informer_list_requests_total", map[string]string{"kind": "Pod"})
	podFiltered, _ := fams.sum("deltacache_informer_shard_filtered_objects_total", map[string]string{"kind": "Pod"})
	s.podLists, s.podFiltered = int(podLists), int(podFiltered)
	s.receivedBytes, s.hasBytes = fams.sum("deltacache_apiserver_received_bytes_total", nil)
	return s, nil
}

// states scrapes every manager; an error names the first that failed.
func states(ctx context.Context, ms []*manager) (map[string]managerState, error) {
	out := map[string]managerState{}
	for _, m := range ms {
		s, err := m.state(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.proc.name, err)
		}
		out[m.proc.name] = s
	}
	return out, nil
}

// eventually calls f every 250ms until it returns nil, failing the test with its last
// error after timeout. It returns how long it took.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) time.Duration {
	t.Helper()
	start := time.Now()
	var err error
	for {
		if err = f(); err == nil {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("%s: not within %v: %v", what, timeout, err)
		}
		time.Sleep(pollInterval)
	}
}

// pollInterval is how often eventually checks.
const pollInterval = 250 * time.Millisecond
