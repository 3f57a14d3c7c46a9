/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package soak

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// report is what docs/reliability.md shows of one run.
type report struct {
	settings
	faults              faultLog
	load                *load
	delivered           int64
	pipeline            pipeline
	maxDelay, converged time.Duration
	diffs               int
	namespaces          int // the writers' namespaces
	acquired, released  int // slots the replicas started serving and gave up (hand-offs)
	maxHeap             uint64
	leftover            int
	passed              bool
	restarts            restartLog
	holds               *holdSampler
	reconciles          int64
	overlaps            []overlap
	memory              []memorySample
}

// runsHeading heads the table of runs, one row per seed: write keeps the rows of the
// other seeds found under it in the report it replaces.
const runsHeading = "## Runs, one row per seed"

// write writes the report to path, keeping the runs of other seeds it held. Two soaks
// of different seeds may end at the same time on the same path: the read and the
// replacement happen under an exclusive flock of "<path>.lock", and the report is
// written to a temporary file renamed over path, so neither loses the other's row.
func (r report) write(path string) error {
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = lock.Close() }()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.WriteString(r.markdown(keptRuns(string(old), r.seed))); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// keptRuns returns the rows of the runs table of doc whose seed is not seed.
func keptRuns(doc string, seed uint64) []string {
	_, table, ok := strings.Cut(doc, runsHeading+"\n")
	if !ok {
		return nil
	}
	var rows []string
	inTable := false // the text before the table is passed over, the table ends at its first other line
	for line := range strings.Lines(table) {
		line = strings.TrimRight(line, "\n")
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		inTable = true
		first := strings.TrimSpace(strings.Split(line, "|")[1])
		if first != "seed" && !strings.HasPrefix(first, "---") && first != fmt.Sprint(seed) {
			rows = append(rows, line)
		}
	}
	return rows
}

func (r report) rateWhileUp() float64 { return r.load.rateWhileUp(r.duration, r.faults.restarts) }

func (r report) result() string {
	if r.passed {
		return "passed"
	}
	return "FAILED"
}

// row is the run's row of the runs table.
func (r report) row() string {
	counts := make([]string, numFaultKinds)
	for k, n := range r.faults.counts {
		counts[k] = fmt.Sprint(n)
	}
	return fmt.Sprintf("| %d | %s | %s | %d (%.0f; %.0f) | %s | %.0f | %.0f | %.0f | %.1f s | %.1f s | %.0f MiB | %d "+
		"| %d / %d | %s | %d | %d |",
		r.seed, r.duration, r.result(), r.load.writes.Load(), r.load.rate(r.duration), r.rateWhileUp(),
		strings.Join(counts, " / "), sum(r.pipeline.relists), r.pipeline.watchStarts, r.pipeline.forbidden,
		r.maxDelay.Seconds(), r.converged.Seconds(), float64(r.maxHeap)/(1<<20), r.diffs,
		r.restarts.graceful, r.restarts.abrupt, r.startKinds(), len(r.holds.doubles), r.unexplainedOverlaps())
}

// startKinds is "cold / resumed / diffed / discarded" of the informers' starts.
func (r report) startKinds() string {
	var n [4]float64
	for start, v := range r.pipeline.starts {
		for i, k := range []string{"cold", "resumed", "diffed", "discarded"} {
			if start == k || strings.HasPrefix(start, k+" ") {
				n[i] += v
			}
		}
	}
	return fmt.Sprintf("%.0f / %.0f / %.0f / %.0f", n[0], n[1], n[2], n[3])
}

func (r report) handOffOverlaps() int {
	n := 0
	for _, o := range r.overlaps {
		if o.handOff {
			n++
		}
	}
	return n
}

// otherObjectOverlaps are the overlaps on two objects of one name (not at a hand-off).
func (r report) otherObjectOverlaps() int {
	n := 0
	for _, o := range r.overlaps {
		if o.otherObject && !o.handOff {
			n++
		}
	}
	return n
}

func (r report) unexplainedOverlaps() int {
	return len(r.overlaps) - r.handOffOverlaps() - r.otherObjectOverlaps()
}

func sum(m map[string]float64) float64 {
	total := 0.0
	for _, v := range m {
		total += v
	}
	return total
}

func (r report) markdown(otherRuns []string) string {
	var b strings.Builder
	b.WriteString(intro)
	fmt.Fprintf(&b, `
## The last run

| | |
| --- | --- |
| result | %s |
| seed | %d |
| duration | %s |
| objects per kind | %d |
| write rate asked | %d writes/s: %d writers, each with a client of its own limited to %.0f QPS |
| write rate achieved | %.0f writes/s over the run; %.0f writes/s while the kube-apiserver was up |
| objects written (writes), failed writes | %d, %d |
| sharded replicas | %d (Pods and Apps by namespace over %d namespaces, ConfigMaps by uid) |
| consistency check | every %s on every informer |
`, r.result(), r.seed, r.duration, r.objects, r.rate, r.writers, float64(r.rate)/float64(r.writers),
		r.load.rate(r.duration), r.rateWhileUp(), r.load.writes.Load(), r.load.failed.Load(),
		r.replicas, r.namespaces, r.checkInterval)
	for k, n := range r.faults.counts {
		fmt.Fprintf(&b, "| faults: %s | %d |\n", faultNames[k], n)
	}
	fmt.Fprintf(&b, `| kube-apiserver away (each restart) | %s |
| events delivered to the recording handlers | %d |
| relists (by cause) | %.0f (%s) |
| consistency checks (by result); objects found drifted | %.0f (%s); %.0f |
| slots taken and given up by the replicas (hand-offs and fences) | %d, %d |
| watches opened (resumes included) | %.0f |
| list and watch errors Forbidden (while a kind was revoked) | %.0f |
| list and watch errors (by operation and reason) | %s |
| largest time from a server write to the cache | %s |
| time to converge after the writers stopped | %s |
| final differences (every replica's share, stores and recording handlers) | %d |
| largest heap in use (whole test process, control-plane client included) | %.1f MiB |
| goroutines left after the cache stopped | %d |
| replica restarts: graceful (SIGTERM), abrupt (SIGKILL) | %d, %d |
| new cache's time from start to synced (each restart) | %s |
| partial snapshot files left by the kills; found after the new cache synced | %d; %d |
| informer starts, all caches (by kind of start) | %s |
| objects loaded from snapshots; fetched by the metadata diffs | %.0f; %.0f |
| store samples (every %s, every replica's informers); keys looked at | %d; %d |
| keys held by two replicas at a sampled moment; in two stores across a hand-off or a removal during the sample; one name held as two objects (different uids) | %d; %d; %d |
| reconciles (Pods, ConfigMaps, Apps on every replica, %s each) | %d |
| overlapping reconciles: at a hand-off of the slot; of two objects of one name (different uids); otherwise | %d; %d; %d |
`, durations(r.faults.restarts), r.delivered, sum(r.pipeline.relists), causes(r.pipeline.relists),
		sum(r.pipeline.checks), causes(r.pipeline.checks), sum(r.pipeline.drift), r.acquired, r.released,
		r.pipeline.watchStarts, r.pipeline.forbidden, causes(r.pipeline.errors), r.maxDelay.Round(time.Millisecond),
		r.converged.Round(time.Millisecond), r.diffs, float64(r.maxHeap)/(1<<20), r.leftover,
		r.restarts.graceful, r.restarts.abrupt, durations(r.restarts.syncedAfter), r.restarts.strays,
		r.restarts.straysLeft, causes(r.pipeline.starts), r.pipeline.loaded, r.pipeline.fetched,
		holdSampleInterval, r.holds.samples, r.holds.keys, len(r.holds.doubles), r.holds.inSample,
		r.holds.otherObjects, reconcileSleep, r.reconciles, r.handOffOverlaps(), r.otherObjectOverlaps(),
		r.unexplainedOverlaps())
	b.WriteString(restartsSection)
	b.WriteString(r.memoryTable())
	b.WriteString(revocationsSection)
	b.WriteString("\n| kind | revoked for | SyncError Forbidden after | readyz while revoked | " +
		"SyncError nil after the restore |\n")
	b.WriteString("| --- | ---: | ---: | --- | ---: |\n")
	for _, v := range r.faults.revocations {
		readyz := "ready"
		if v.unready {
			readyz = "not ready"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", v.kind, v.held.Round(100*time.Millisecond),
			orNever(v.forbiddenAfter), readyz, orNever(v.clearedAfter))
	}
	b.WriteString(limitsSection)
	fmt.Fprintf(&b, "\n%s\n\n", runsHeading)
	b.WriteString("Faults, in the order of the table above: cuts / blackholes / slow links / kube-apiserver " +
		"restarts / etcd compactions / RBAC revocations / CRD re-creations / replica restarts (from run 6 on). Writes: total (per second over the " +
		"run; per second while the kube-apiserver was up).\n\n")
	b.WriteString(runsNote)
	b.WriteString("| seed | duration | result | writes | faults | relists | watches opened | Forbidden errors | " +
		"largest write→cache | converged after | heap in use (max) | final differences | replica restarts " +
		"(graceful / abrupt) | informer starts (cold / resumed / diffed / discarded) | double-held keys | " +
		"overlapping reconciles (not at a hand-off) |\n")
	b.WriteString("| ---: | --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | ---: | ---: |\n")
	rows := append(slices.Clone(otherRuns), r.row())
	slices.SortFunc(rows, func(a, b string) int { return strings.Compare(seedOf(a), seedOf(b)) })
	for _, row := range rows {
		b.WriteString(row + "\n")
	}
	return b.String()
}

func seedOf(row string) string {
	return fmt.Sprintf("%20s", strings.TrimSpace(strings.Split(row, "|")[1]))
}

func orNever(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return d.Round(10 * time.Millisecond).String()
}

func durations(ds []time.Duration) string {
	if len(ds) == 0 {
		return "—"
	}
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Round(100 * time.Millisecond).String()
	}
	return strings.Join(out, ", ")
}

func causes(m map[string]float64) string {
	var out []string
	for _, c := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%s %.0f", c, m[c]))
	}
	return strings.Join(out, ", ")
}

const intro = `# Reliability: the fault-injection soak

Generated by ` + "`make soak`" + ` (test/soak): deltacache's caches on the local control plane (the
kube-apiserver and etcd of ` + "`make envtest`" + `) behind a fault-injecting TCP proxy on 127.0.0.1,
while writers create, update, delete and re-create Pods, ConfigMaps and demo Apps in several
namespaces. Three caches (` + "`SOAK_REPLICAS`" + `) run as the sharded replicas of one operator, in one
Lease ring: Pods and Apps sharded by namespace, ConfigMaps by uid; each runs the consistency
check (every ninth of the run, within 10 s to 1 min). The caches run as a user that is not an
admin: it may get, list and watch the three kinds, each through a ClusterRole and
ClusterRoleBinding of its own, keep the ring's Leases and list and watch Namespaces.
Informers of each replica: typed Pods (with a field index), ConfigMaps and Apps,
metadata-only ConfigMaps, unstructured Apps, with the label index ` + "`app`" + `; each has a
recording handler, a slow one (2 ms per call) and one that panics every 97th call. Faults are
drawn from the seed: first every kind once, in a seeded order, then at random, 3–8 s apart;
the kube-apiserver's restarts outlast the ring's Leases (15 s), so replicas fence themselves
and take their shares again. Snapshots are on, and a fault restarts a replica (below).
After the writers stop and the faults heal, the ring must have
settled (each replica serving its share of the slots) and every store and every recording
handler is compared with a consistent LIST: each object held by exactly the replica that
serves its slot, at the server's uid and resourceVersion, nothing else held; each handler's
last event of every object of its share shows the server's state, no event follows the
Delete of the same object, and an object it saw last that is gone (or another replica's now)
is excused only if its slot left the replica since (a hand-off is not a deletion). The
consistency checks must find no drift. Replay a run with ` + "`SOAK_SEED=<seed> make soak`" + `;
each run replaces its seed's row of the runs table at the end.
`

const revocationsSection = `
## What the cache reports while a kind's permission is revoked

An RBAC fault deletes the ClusterRoleBinding of one kind, cuts the connections (an open watch
outlives a revocation: the API server authorizes a request when it starts), keeps the binding
away for 10–30 s and creates it again. While it is away, the informers of that kind keep their
store and their HasSynced (true: they synced once), and every list and watch they try is
refused: ` + "`Cache.SyncError(gvk)`" + ` (and ` + "`SyncErrors()`" + `) returns the Forbidden error,
a ` + "`*informer.ListWatchError`" + ` that ` + "`apierrors.IsForbidden`" + ` recognises,
` + "`deltacache_informer_errors_total{reason=\"Forbidden\"}`" + ` counts it, and the
WatchErrorHandler logs it. The readyz check stays ready, since it reports informers that have
not synced, and the healthz check fails only after its stall timeout (15 minutes without word
from the server). Once the binding is back, the informer's next try (its backoff: 0.8 s
doubling to 30 s) lists again and SyncError is nil.
`

const limitsSection = `
The largest time from a server write to the cache includes the blackholes (the link is frozen
for up to 60 s in a 10-minute run, shorter in the 90-second run of ` + "`make test`" + `), the
kube-apiserver restarts and the revocations, and the reconnection after them; the heap figure
is the whole test process's. The etcd compactions are the soak's own (the kube-apiserver's
periodic compaction is off): each compacts at etcd's current revision and cuts the
connections, so the watches resume from a resourceVersion older than the compaction.
The relists of cause "shard" are the replicas' hand-offs (a slot's objects listed by
the replica that takes it); those of cause "drift" are the consistency check's.
`

// runsNote says what the rows of earlier configurations measured.
const runsNote = "Seeds 1–4 ran before the soak was sharded: one cache, no consistency check. In runs 1–3 each " +
	"writer had one rate limiter per kind (up to 60 writes/s a writer), so the machine, not the rate asked, held the " +
	"writers; from run 4 on, each writer has one limiter for all its requests (`rest.Config.RateLimiter`). From run 5 " +
	"on, the largest write→cache counts the first time any replica's informer saw a write (a hand-off's adds of " +
	"objects written long before are not a delay). From run 6 on, the replicas write snapshots and a fault restarts " +
	"one; the last four columns are new then.\n\n"

// A run replaces its seed's row of the runs table and keeps the other seeds' rows.
func TestReportKeepsTheRunsOfOtherSeeds(t *testing.T) {
	doc := "# Reliability\n\n" + runsHeading + "\n\nFaults, ...\n\n| seed | duration |\n| ---: | --- |\n" +
		"| 1 | 10m0s |\n| 2 | 10m0s |\n\nafter the table\n| 3 | not a run |\n"
	got := keptRuns(doc, 2)
	if want := []string{"| 1 | 10m0s |"}; !slices.Equal(got, want) {
		t.Errorf("keptRuns(seed 2) = %q, want %q", got, want)
	}
	if got := keptRuns("# no runs table\n| 1 | 10m0s |\n", 2); got != nil {
		t.Errorf("keptRuns of a report without a runs table = %q, want none", got)
	}
}

// memoryTable shows each replica's stored bytes over time, one line per replica, and
// the process's heap in use.
func (r report) memoryTable() string {
	if len(r.memory) == 0 {
		return ""
	}
	var b strings.Builder
	ats := make([]string, len(r.memory))
	heap := make([]string, len(r.memory))
	ids := map[string]bool{}
	for i, s := range r.memory {
		ats[i] = s.at.String()
		heap[i] = fmt.Sprintf("%.1f", float64(s.heap)/(1<<20))
		for id := range s.stored {
			ids[id] = true
		}
	}
	fmt.Fprintf(&b, "\nEach replica's memory over time: the replicas share one process, so this is the "+
		"bytes of the encoded objects in each replica's stores (`deltacache_informer_stored_bytes` of its "+
		"informers, summed: `Indexer.StoredStats().EncodedBytes`), not RSS; the last line is the whole "+
		"process's heap in use (the control plane's clients, the writers and the recorders' histories included). "+
		"Sampled after the replicas synced and every minute, and once more after the writers stopped "+
		"(at %s).\n\n", strings.Join(ats, ", "))
	b.WriteString("| replica | stored MiB at each sample |\n| --- | --- |\n")
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		vs := make([]string, len(r.memory))
		for i, s := range r.memory {
			if v, ok := s.stored[id]; ok {
				vs[i] = fmt.Sprintf("%.2f", float64(v)/(1<<20))
			} else {
				vs[i] = "—" // being restarted
			}
		}
		fmt.Fprintf(&b, "| %s | %s |\n", id, strings.Join(vs, ", "))
	}
	fmt.Fprintf(&b, "| heap in use (process) | %s |\n", strings.Join(heap, ", "))
	return b.String()
}

const restartsSection = `
A replica restart stops one replica's cache and starts a new one with the same identity
and snapshot directory (each replica writes its snapshots every 20 s and at stop, in a
directory of its own that outlives its restarts), which syncs and takes its share of the
slots again; the stopped cache's informers and handlers are no longer compared, the new
one's are (its handlers see an Add for each object of its share again). How it stops is
drawn from the seed when a cache is built. *Graceful* (SIGTERM): its context is
cancelled and Start returns once the informers wrote their snapshots and the ring
deleted its Lease. *Abrupt* (SIGKILL), simulated in the one test process: the cache was
built with ` + "`KeepLeaseOnStop`" + ` (its Lease expires instead of being deleted, as after a
crash); its snapshot directory is renamed away, which freezes it as it was at that moment
(a write under way lands in the renamed directory or leaves its temporary file there); a
partial temporary file (the first half of a snapshot file, named as the informer names
its temporary files) is added to it, as a kill in the middle of a write leaves; then the
context is cancelled, the writes made at stop go to a new directory that is removed, and
the frozen directory is put back. The new cache must remove the partial file and start
from the last complete snapshot. The informers' starts are
` + "`deltacache_informer_starts_total`" + ` summed over every cache built (the first caches start
cold: their directories are empty). A key is *held* by a replica when it is in the store
of one of its informers (` + "`ListKeys`" + `); every few seconds the stores of every running replica
are listed one after the other, and a key found in two is a double hold unless the replica
listed first gave up the key's slot after its listing (a hand-off during the sample: the
ring releases before the other claims), or one of the two stores no longer holds it right
after the listing, when the uids of a ConfigMap key found in two are read (two uids: two
objects of one name, below). Each replica also runs a *reconcile* handler on its
typed Pods, ConfigMaps and Apps that marks the key in a map shared by every replica,
sleeps and unmarks it; a replica entering a key another cache is in is an overlapping
reconcile, at a hand-off if the holder's or the entrant's replica gave up the key's slot
within the 30 s before (a replica's handlers may still be delivering events of a slot it
gave up: the store drops the slot's objects, but not the notifications already queued) or
was being stopped by a restart. ConfigMaps are sharded by uid: a ConfigMap deleted and re-created
under its name is a new object in another slot, so for a while one replica may hold (or
reconcile) the deleted one and another the new one; the soak counts these apart (the uids
of the two differ) and does not fail on them. A reconcile keyed by name, as
controller-runtime's are, sees one name reconciled on two replicas at once then: inherent to
sharding a kind by uid whose names are re-used.
`

// Two soaks of different seeds ending at once on the same report keep both rows: each
// replaces its own row under the lock, re-reading what the other wrote.
func TestReportWritesOfTwoSeedsAtOnceKeepBothRows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reliability.md")
	var wg sync.WaitGroup
	for _, seed := range []uint64{11, 12} {
		wg.Go(func() {
			for range 20 {
				r := report{settings: settings{seed: seed, duration: time.Hour}, load: &load{}, holds: &holdSampler{}}
				if err := r.write(path); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows := keptRuns(string(doc), 0)
	if len(rows) != 2 || !strings.HasPrefix(rows[0], "| 11 |") || !strings.HasPrefix(rows[1], "| 12 |") {
		t.Errorf("runs after two soaks wrote at once: %q, want the rows of seeds 11 and 12", rows)
	}
	if temps, _ := filepath.Glob(path + ".tmp-*"); len(temps) > 0 {
		t.Errorf("temporary files left: %v", temps)
	}
}
