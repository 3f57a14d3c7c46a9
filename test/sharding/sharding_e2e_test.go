//go:build sharding

package sharding

import "testing"

// TestSharding runs every scenario once with the ShardedListAndWatch feature gate (the
// server filters each replica's lists and watches) and once without (each replica
// filters on the client), each on its own control plane.
func TestSharding(t *testing.T) {
	for _, gate := range []bool{true, false} {
		name := map[bool]string{true: "ShardedListAndWatch", false: "ClientSideFallback"}[gate]
		t.Run(name, func(t *testing.T) {
			cp := startControlPlane(t, gate)
			t.Run("ByNamespace", func(t *testing.T) { testNamespaceSharding(t, cp) })
			t.Run("ByUID", func(t *testing.T) { testUIDSharding(t, cp) })
		})
	}
}
