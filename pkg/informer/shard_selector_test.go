package informer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	serversharding "k8s.io/apiserver/pkg/sharding"
)

// serverMatch is kube-apiserver's own shard selection (k8s.io/apiserver's
// parser, apimachinery's selector): what a server with the
// ShardedListAndWatch gate applies to a request's shardSelector.
func serverMatch(selector string, obj any) (bool, error) {
	sel, err := serversharding.Parse(selector)
	if err != nil {
		return false, err
	}
	return sel.Matches(obj.(*corev1.Pod))
}

func shardPod(ns, name, uid string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), ResourceVersion: "1"}}
}

func TestShardHashIsTheServersFNV1a(t *testing.T) {
	for _, v := range []string{"", "abc", "ns-00", "0b6e3f4c-5d2a-4e1f-9a7b-3c8d2e1f0a9b"} {
		if got, want := fmt.Sprintf("%016x", ShardHash(v)), apisharding.HashField(v); got != want {
			t.Errorf("ShardHash(%q) = %s, the server's HashField = %s", v, got, want)
		}
	}
	// FNV-1a 64 of "" is its offset basis.
	if got := ShardHash(""); got != 0xcbf29ce484222325 {
		t.Errorf("ShardHash(\"\") = %#x, want 0xcbf29ce484222325", got)
	}
}

func TestShardSelectorStringIsTheServersSyntax(t *testing.T) {
	sel := &ShardSelector{Field: ShardByUID, Ranges: []HashRange{{0, 1<<63 - 1}, {0xc000000000000000, math.MaxUint64}}}
	want := "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || " +
		"shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"
	if got := sel.String(); got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
	parsed, err := serversharding.Parse(sel.String())
	if err != nil {
		t.Fatalf("the server's parser rejects %q: %v", sel.String(), err)
	}
	if got := parsed.String(); got != want {
		t.Errorf("the server reads it as %q, want %q", got, want)
	}
	if got := (*ShardSelector)(nil).String(); got != "" {
		t.Errorf("nil selector String() = %q, want \"\"", got)
	}
	empty := &ShardSelector{Field: ShardByNamespace}
	if _, err := serversharding.Parse(empty.String()); err != nil {
		t.Errorf("the server's parser rejects the empty selector's %q: %v", empty.String(), err)
	}
}

// TestShardSelectorMatchesAsTheServer compares Matches with the server's
// selection on random uids and namespaces, for ranges that begin, end or
// sit exactly at each object's hash and random ones.
func TestShardSelectorMatchesAsTheServer(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	for i := range 300 {
		p := shardPod(fmt.Sprintf("ns-%02d", i%40), fmt.Sprintf("p%d", i), string(uuid.NewUUID()))
		for _, field := range []ShardField{ShardByUID, ShardByNamespace} {
			probe := &ShardSelector{Field: field}
			h, _ := probe.hash(p)
			a, b := rng.Uint64(), rng.Uint64()
			ranges := []HashRange{
				{h, h}, {h, math.MaxUint64}, {0, h}, {min(a, b), max(a, b)}, {0, math.MaxUint64},
			}
			if h > 0 {
				ranges = append(ranges, HashRange{0, h - 1}, HashRange{h - 1, h - 1})
			}
			if h < math.MaxUint64 {
				ranges = append(ranges, HashRange{h + 1, math.MaxUint64}, HashRange{h + 1, h + 1})
			}
			for _, r := range ranges {
				sel := &ShardSelector{Field: field, Ranges: []HashRange{r}}
				want, err := serverMatch(sel.String(), p)
				if err != nil {
					t.Fatalf("server: %v", err)
				}
				if got := sel.Matches(p); got != want {
					t.Fatalf("%s hash %#x in %s: Matches = %v, the server says %v", field, h, r, got, want)
				}
			}
		}
	}
}

func TestEmptyShardSelectorMatchesNothingAndNilEverything(t *testing.T) {
	p := shardPod("a", "p", "u1")
	if (&ShardSelector{Field: ShardByUID}).Matches(p) {
		t.Error("a selector without ranges matched")
	}
	if !(*ShardSelector)(nil).Matches(p) {
		t.Error("a nil selector did not match")
	}
	if (&ShardSelector{Field: ShardByUID, Ranges: []HashRange{FullRange}}).Matches("not an object") {
		t.Error("an object without metadata matched")
	}
}
