package controller

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestReconcileLogWritesOneJSONLinePerReconcileOfConcurrentReconciles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "reconciles.jsonl")
	log, err := OpenReconcileLog(path, "replica-a")
	if err != nil {
		t.Fatal(err)
	}
	r := log.Wrap(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		time.Sleep(time.Millisecond)
		return reconcile.Result{}, nil
	}))
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("app-%d", i)}}
			if _, err := r.Reconcile(context.Background(), req); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	keys := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line reconcileLine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		start, err1 := time.Parse(time.RFC3339Nano, line.Start)
		end, err2 := time.Parse(time.RFC3339Nano, line.End)
		if err1 != nil || err2 != nil || end.Sub(start) < time.Millisecond || line.Replica != "replica-a" {
			t.Fatalf("line %q: replica, start or end wrong (%v, %v)", sc.Text(), err1, err2)
		}
		keys[line.Key] = true
	}
	if len(keys) != n || !keys["ns/app-7"] {
		t.Fatalf("%d distinct keys logged, want %d (ns/app-7 among them: %v)", len(keys), n, keys["ns/app-7"])
	}
}
