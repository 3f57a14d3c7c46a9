//go:build sharding

package sharding

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/deltacache/deltacache/pkg/shard"
)

// announceMembers writes, for each identity, the Lease its replica would write on its
// first round, claiming no slot, so that the replicas started next find the whole ring
// from their first round. Without it the first replica to start is alone for a round:
// it claims every slot and lists every object before the others join and it hands
// two thirds over, and the bytes it read measure that race rather than its share.
// The Leases expire after leaseDuration if a replica does not start.
func announceMembers(t *testing.T, cp *controlPlane, identities []string) {
	t.Helper()
	now := metav1.NewMicroTime(time.Now())
	for _, id := range identities {
		lease := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: leaseNamespace, Name: ringName + "-" + id,
				Labels:      map[string]string{shard.RingLabel: ringName},
				Annotations: map[string]string{shard.SlotsAnnotation: ""}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(id), AcquireTime: &now, RenewTime: &now,
				LeaseDurationSeconds: ptr.To(int32(leaseDuration / time.Second))},
		}
		if err := cp.client.Create(context.Background(), lease); err != nil {
			t.Fatalf("announcing %s: %v", id, err)
		}
	}
}
