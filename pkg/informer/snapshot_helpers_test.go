package informer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/deltacache/deltacache/pkg/informer/informertest"
)

// snapshotServer is a Fake with the metadata LIST and Get a metadata diff
// uses, counting the Gets and recording the LIST's page limits. maxPage, when
// positive, caps a metadata page below the limit asked (as a server may).
type snapshotServer struct {
	*informertest.Fake
	mu      sync.Mutex
	gets    []string
	limits  []int64
	getRVs  []string
	maxPage int
}

func newSnapshotServer() *snapshotServer {
	f := informertest.New(&corev1.Pod{})
	f.ServeBookmarks(true)
	return &snapshotServer{Fake: f}
}

// podUID creates a pod with a uid in the server.
func (s *snapshotServer) createPod(name, uid string, labels ...string) {
	p := pod(ns1, name, "", labels...)
	p.UID = types.UID(uid)
	s.Create(p)
}

func (s *snapshotServer) listMetadata(_ context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error) {
	s.mu.Lock()
	s.limits = append(s.limits, opts.Limit)
	maxPage := s.maxPage
	s.mu.Unlock()
	rv := s.ResourceVersion()
	objs := s.Objects()
	from := 0
	if opts.Continue != "" {
		if _, err := fmt.Sscan(opts.Continue, &from); err != nil {
			return nil, err
		}
	}
	to := len(objs)
	if opts.Limit > 0 {
		to = min(to, from+int(opts.Limit))
	}
	if maxPage > 0 {
		to = min(to, from+maxPage)
	}
	l := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
	for _, o := range objs[from:to] {
		p := o.(*corev1.Pod)
		l.Items = append(l.Items, metav1.PartialObjectMetadata{ObjectMeta: *p.ObjectMeta.DeepCopy()})
	}
	if to < len(objs) {
		l.Continue = fmt.Sprint(to)
	}
	return l, nil
}

// getResourceVersions returns the ResourceVersion of every Get so far.
func (s *snapshotServer) getResourceVersions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.getRVs)
}

// metadataLimits returns the Limit of every metadata LIST request so far.
func (s *snapshotServer) metadataLimits() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.limits)
}

func (s *snapshotServer) get(_ context.Context, namespace, name string, opts metav1.GetOptions) (runtime.Object, error) {
	s.mu.Lock()
	s.gets = append(s.gets, namespace+"/"+name)
	s.getRVs = append(s.getRVs, opts.ResourceVersion)
	s.mu.Unlock()
	obj, ok := s.Get(namespace + "/" + name)
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: podsResource}, name)
	}
	return obj.DeepCopyObject(), nil
}

func (s *snapshotServer) gotten() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.gets)
	slices.Sort(out)
	return out
}

// state renders the server's objects as "key uid@rv", sorted.
func (s *snapshotServer) state() []string {
	var out []string
	for _, o := range s.Objects() {
		out = append(out, uidRV(o))
	}
	slices.Sort(out)
	return out
}

func uidRV(o any) string {
	p := o.(*corev1.Pod)
	return fmt.Sprintf("%s/%s %s@%s", p.Namespace, p.Name, p.UID, p.ResourceVersion)
}

// storeState renders the informer's store as state does.
func storeState(s *SharedIndexInformer) []string {
	var out []string
	for _, o := range s.GetStore().List() {
		out = append(out, uidRV(o))
	}
	slices.Sort(out)
	return out
}

// snapshotRun is one run of a snapshotting pod informer on a server.
type snapshotRun struct {
	*informerRun
	rec  *recorder
	logs *logLines
}

// runSnapshotInformer starts a pod informer with compact storage and
// snapshots in dir (identity "pods", version "test" unless cfg sets them),
// with a recording handler, and waits for it to sync.
func runSnapshotInformer(t *testing.T, srv *snapshotServer, dir string, cfg Snapshot) *snapshotRun {
	t.Helper()
	return runSnapshotInformerWith(t, srv, dir, cfg, podCodec(t))
}

// runSnapshotInformerWith is runSnapshotInformer with the storage codec sc.
func runSnapshotInformerWith(t *testing.T, srv *snapshotServer, dir string, cfg Snapshot, sc StorageCodec) *snapshotRun {
	t.Helper()
	cfg.Dir = dir
	if cfg.Identity == "" {
		cfg.Identity = "pods"
	}
	if cfg.Version == "" {
		cfg.Version = "test"
	}
	if cfg.ListMetadata == nil {
		cfg.ListMetadata = srv.listMetadata
	}
	if cfg.Get == nil {
		cfg.Get = srv.get
	}
	logs := &logLines{}
	s := newPodInformer(srv, Options{StorageCodec: sc, Snapshot: cfg, Logger: logs.logger(), Metrics: NewMetrics(),
		DisableWatchList: true})
	rec := newRecorder()
	addHandler(t, s, rec)
	run := startInformer(t, s)
	eventually(t, 10*time.Second, "informer to sync", s.HasSynced)
	return &snapshotRun{informerRun: run, rec: rec, logs: logs}
}

// initialAdds renders the expected handler calls of a start: one initial
// add per object of state ("key uid@rv" lines).
func initialAdds(state []string) []string {
	out := make([]string, 0, len(state))
	for _, line := range state {
		key, uidAtRV, _ := strings.Cut(line, " ")
		_, rv, _ := strings.Cut(uidAtRV, "@")
		out = append(out, "add "+key+"@"+rv+initialSuffix)
	}
	slices.Sort(out)
	return out
}

func sortedEvents(r *recorder) []string {
	out := r.all()
	slices.Sort(out)
	return out
}
