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

package cache_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/deltacache/deltacache/pkg/shard"
)

// The relist of the combination suite: besides its Pods, every cell's cache holds a
// bulk of ConfigMaps shared by the cells, more than the pop loop takes in one batch
// (4,096 keys), so that a relist is larger than a batch. Two of them are probes,
// labelled combo-probe and indexed under "probe": the old one, deleted while the
// cache cannot watch, sorts after the others (its delete is queued after the listed
// objects), the new one, created meanwhile, sorts first. A relist published whole
// shows either the old probe or the new one, never both nor neither, to a reader and
// to a handler called during the relist's notifications.

const (
	comboBulkObjects = 4500
	comboBulkLabel   = "combo-bulk"
	comboProbeLabel  = "combo-probe"
	comboProbeIdx    = "probe"
)

// comboBulk is the ConfigMaps every cell caches.
type comboBulk struct {
	ns  string // served by the replica in namespace-sharded cells
	run string // their comboBulkLabel value
}

var (
	comboBulkOnce sync.Once
	comboBulkOf   *comboBulk
	comboBulkErr  error
)

// requireComboBulk creates the bulk once per run: comboBulkObjects ConfigMaps in a
// namespace of the replica's share, one of them the probe "zz-probe-0"; they are
// deleted when parent ends.
func requireComboBulk(t, parent *testing.T) *comboBulk {
	t.Helper()
	comboBulkOnce.Do(func() {
		b := &comboBulk{run: rand.String(6)}
		for i := 0; b.ns == ""; i++ {
			if name := fmt.Sprintf("combo-bulk-%s-%d", b.run, i); comboServed.Has(shard.SlotOfNamespace(name)) {
				b.ns = name
			}
		}
		start := time.Now()
		comboBulkErr = b.create()
		parent.Cleanup(func() {
			cs := kubernetes.NewForConfigOrDie(cfg)
			_ = cs.CoreV1().ConfigMaps(b.ns).DeleteCollection(context.Background(), metav1.DeleteOptions{},
				metav1.ListOptions{})
			_ = cs.CoreV1().Namespaces().Delete(context.Background(), b.ns, metav1.DeleteOptions{})
		})
		parent.Logf("%d bulk ConfigMaps created in %v", comboBulkObjects, time.Since(start).Round(time.Millisecond))
		comboBulkOf = b
	})
	if comboBulkErr != nil {
		t.Fatalf("creating the bulk ConfigMaps: %v", comboBulkErr)
	}
	return comboBulkOf
}

func (b *comboBulk) create() error {
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: b.ns}},
		metav1.CreateOptions{}); err != nil {
		return err
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	const workers = 16
	for w := range workers {
		wg.Go(func() {
			for i := w; i < comboBulkObjects-1; i += workers {
				if _, err := cs.CoreV1().ConfigMaps(b.ns).Create(ctx, b.configMap(fmt.Sprintf("cm-%05d", i), false),
					metav1.CreateOptions{}); err != nil {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		return fmt.Errorf("%d ConfigMaps not created", failed.Load())
	}
	_, err := cs.CoreV1().ConfigMaps(b.ns).Create(ctx, b.configMap("zz-probe-0", true), metav1.CreateOptions{})
	return err
}

func (b *comboBulk) configMap(name string, probe bool) *corev1.ConfigMap {
	lbls := map[string]string{comboBulkLabel: b.run}
	if probe {
		lbls[comboProbeLabel] = "yes"
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: b.ns, Name: name, Labels: lbls},
		Data: map[string]string{"k": name}}
}

// comboProbeIndex indexes the probes (any shape) under "yes".
func comboProbeIndex(o client.Object) []string {
	if o.GetLabels()[comboProbeLabel] == "yes" {
		return []string{"yes"}
	}
	return nil
}

// configMapExample returns an empty ConfigMap of the cell's shape.
func (w *comboWorld) configMapExample() client.Object {
	switch w.cell.shape {
	case shapeUnstructured:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvkConfigMap)
		return u
	case shapeMetadata:
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvkConfigMap)
		return m
	default:
		return &corev1.ConfigMap{}
	}
}

// probes returns the names of the probes deltacache's cache holds, sorted: one List,
// which reads one state of the store.
func (w *comboWorld) probes(ctx context.Context) ([]string, error) {
	var list client.ObjectList
	switch w.cell.shape {
	case shapeUnstructured:
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
		list = l
	case shapeMetadata:
		l := &metav1.PartialObjectMetadataList{}
		l.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
		list = l
	default:
		list = &corev1.ConfigMapList{}
	}
	if err := w.ours.List(ctx, list, client.InNamespace(w.bulk.ns), client.MatchingFields{comboProbeIdx: "yes"}); err != nil {
		return nil, err
	}
	items, err := apimeta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, item := range items {
		names = append(names, item.(client.Object).GetName())
	}
	slices.Sort(names)
	return names, nil
}

// comboProbeWatch records the probe states deltacache's cache shows, from a reader
// polling and from a handler's calls, while on.
type comboProbeWatch struct {
	on     atomic.Bool
	mu     sync.Mutex
	states map[string]int // "reader: [names]" or "handler: [names]" → times seen
}

func (p *comboProbeWatch) saw(who string, names []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.states == nil {
		p.states = map[string]int{}
	}
	p.states[fmt.Sprintf("%s: %v", who, names)]++
}

// handler returns the event handler that reads the probes at each call while on.
func (p *comboProbeWatch) handler(w *comboWorld) toolscache.ResourceEventHandler {
	read := func() {
		if !p.on.Load() {
			return
		}
		if names, err := w.probes(context.Background()); err == nil {
			p.saw("handler", names)
		}
	}
	return toolscache.ResourceEventHandlerFuncs{AddFunc: func(any) { read() },
		UpdateFunc: func(any, any) { read() }, DeleteFunc: func(any) { read() }}
}

// comboRelistBulk relists the cell's ConfigMaps with the old probe deleted and a new
// one created while the cache could not watch, and checks that a reader polling the
// probes and a handler reading them at each of its calls see the old state or the new
// one, never a mix. Under uid sharding the probes' uids decide whether they are in
// the share: the state is then judged on those of the share.
func comboRelistBulk(t *testing.T, w *comboWorld, mutate func()) {
	t.Helper()
	ctx := envCtx(t)
	cs := kubernetes.NewForConfigOrDie(cfg)
	var probes corev1.ConfigMapList
	if err := k8sClient.List(ctx, &probes, client.InNamespace(w.bulk.ns),
		client.MatchingLabels{comboProbeLabel: "yes"}); err != nil || len(probes.Items) != 1 {
		t.Fatalf("the bulk has %d probes (%v), want one", len(probes.Items), err)
	}
	old := probes.Items[0]
	fresh := w.bulk.configMap("a-probe-"+w.run, true)
	inShare := func(cm *corev1.ConfigMap) bool { return w.inShare(cm.Namespace+"/"+cm.Name, cm.UID) }
	before, after := []string{}, []string{}
	if inShare(&old) {
		before = []string{old.Name}
	}
	eventually(t, comboWait, func() error { // the cache holds the old state
		got, err := w.probes(ctx)
		if err != nil || !slices.Equal(got, before) {
			return fmt.Errorf("probes held %v (%v), want %v", got, err, before)
		}
		return nil
	})
	w.probeWatch.on.Store(true)
	defer w.probeWatch.on.Store(false)
	readerDone := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if names, err := w.probes(ctx); err == nil {
				w.probeWatch.saw("reader", names)
			}
			time.Sleep(time.Millisecond)
		}
	}()
	w.transport.freeze()
	if err := cs.CoreV1().ConfigMaps(old.Namespace).Delete(ctx, old.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	created, err := cs.CoreV1().ConfigMaps(fresh.Namespace).Create(ctx, fresh, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if inShare(created) {
		after = []string{created.Name}
	}
	mutate()
	w.transport.thaw()
	eventually(t, comboWait, func() error {
		got, err := w.probes(ctx)
		if err != nil || !slices.Equal(got, after) {
			return fmt.Errorf("probes held %v (%v), want %v", got, err, after)
		}
		return nil
	})
	time.Sleep(100 * time.Millisecond) // the handler's last calls of the relist
	close(stop)
	<-readerDone
	w.probeWatch.mu.Lock()
	defer w.probeWatch.mu.Unlock()
	valid := map[string]bool{fmt.Sprint(before): true, fmt.Sprint(after): true}
	for state, n := range w.probeWatch.states {
		_, names, _ := strings.Cut(state, ": ")
		if !valid[names] {
			t.Errorf("%s seen %d times during the relist of %d ConfigMaps: neither the old state %v nor the new %v",
				state, n, comboBulkObjects, before, after)
		}
	}
	t.Logf("probe states seen during the relist: %v", w.probeWatch.states)
	w.probeWatch.states = nil
}

// comboTransport lets a test stop a cache's traffic: freeze cuts the open watches
// and holds every new request until thaw, after which the first plain watch of each
// resource path (one that resumes from a resourceVersion) is answered 410 Expired, so
// that the informers relist, with what changed meanwhile.
type comboTransport struct {
	next http.RoundTripper

	mu      sync.Mutex
	open    []io.Closer
	frozen  chan struct{} // closed by thaw; nil when not frozen
	expired map[string]bool
}

func (c *comboTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c.mu.Lock()
	frozen := c.frozen
	c.mu.Unlock()
	if frozen != nil {
		select {
		case <-frozen:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	q := req.URL.Query()
	isWatch := q.Get("watch") == "true" || q.Get("watch") == "1"
	if isWatch && q.Get("sendInitialEvents") != "true" {
		c.mu.Lock()
		fail := c.expired != nil && !c.expired[req.URL.Path]
		if fail {
			c.expired[req.URL.Path] = true
		}
		c.mu.Unlock()
		if fail {
			body := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",` +
				`"message":"too old resource version","reason":"Expired","code":410}`
			return &http.Response{StatusCode: http.StatusGone, Status: "410 Gone", Request: req,
				Header: http.Header{"Content-Type": []string{"application/json"}},
				Body:   io.NopCloser(strings.NewReader(body)), ProtoMajor: 1, ProtoMinor: 1}, nil
		}
	}
	resp, err := c.next.RoundTrip(req)
	if err == nil && isWatch {
		c.mu.Lock()
		c.open = append(c.open, resp.Body)
		c.mu.Unlock()
	}
	return resp, err
}

// freeze cuts the open watches and holds new requests until thaw.
func (c *comboTransport) freeze() {
	c.mu.Lock()
	open := c.open
	c.open, c.frozen, c.expired = nil, make(chan struct{}), map[string]bool{}
	c.mu.Unlock()
	for _, b := range open {
		_ = b.Close()
	}
}

// thaw lets the held requests go.
func (c *comboTransport) thaw() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.frozen)
	c.frozen = nil
}
