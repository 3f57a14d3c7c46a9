package cache

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/deltacache/deltacache/pkg/shard"
)

func TestWithShardingRejectsAnIncompleteConfiguration(t *testing.T) {
	ring := shard.Options{Namespace: "ops", Name: "demo", Identity: "replica-0"}
	for _, tc := range []struct {
		name     string
		sharding Sharding
		want     string
	}{
		{"no kind", Sharding{Ring: ring}, "at least one kind"},
		{"no identity", Sharding{Ring: shard.Options{Namespace: "ops", Name: "demo"},
			ByUID: []client.Object{&corev1.ConfigMap{}}}, "Identity are required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewWith(WithSharding(tc.sharding))(&rest.Config{Host: unreachableHost},
				crcache.Options{Mapper: testMapper()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
}

func TestWithShardingShardsOnlyTheListedKindsAndStartsThemEmpty(t *testing.T) {
	c, err := newCache(&rest.Config{Host: unreachableHost}, crcache.Options{Mapper: testMapper()}, Config{
		Sharding: &Sharding{Ring: shard.Options{Namespace: "ops", Name: "demo", Identity: "replica-0"},
			ByUID: []client.Object{&corev1.ConfigMap{}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cm := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	pod := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	if sel := c.shardSelectorFor(cm); sel == nil || !sel.Empty() {
		t.Errorf("ConfigMap informers start with %v, want an empty selector (no slot granted yet)", sel)
	}
	if sel := c.shardSelectorFor(pod); sel != nil {
		t.Errorf("Pod informers start with %v, want none (not sharded)", sel)
	}
	if c.Ring() == nil || c.Ring().Identity() != "replica-0" {
		t.Fatal("no ring, or not this replica's")
	}
	err = &NotInShardError{GVK: cm, Key: client.ObjectKey{Namespace: "a", Name: "x"}}
	if !errors.Is(err, ErrNotInShard) || !strings.Contains(err.Error(), "ConfigMap a/x") {
		t.Errorf("NotInShardError = %q, Is(ErrNotInShard) = %v", err, errors.Is(err, ErrNotInShard))
	}
}
