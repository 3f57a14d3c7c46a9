package informer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/deltacache/deltacache/pkg/informer/codec"
)

// labelCountingCodec is a countingCodec that reads labels from the bytes (it
// forwards LabelReader), and counts those reads.
type labelCountingCodec struct {
	*countingCodec
	labelReads int
}

func (c *labelCountingCodec) AppendLabels(dst []string, data []byte) ([]string, error) {
	c.labelReads++
	return c.StorageCodec.(LabelReader).AppendLabels(dst, data)
}

// byApp indexes a pod by its label "app"; byTiers by each value of "tiers"
// split at ",", so that an object can be filed under several values.
func selectIndexers() toolscache.Indexers {
	return toolscache.Indexers{
		toolscache.NamespaceIndex: toolscache.MetaNamespaceIndexFunc,
		"app": func(obj any) ([]string, error) {
			if v, ok := obj.(metav1.Object).GetLabels()["app"]; ok {
				return []string{v}, nil
			}
			return nil, nil
		},
		"tiers": func(obj any) ([]string, error) {
			if v, ok := obj.(metav1.Object).GetLabels()["tiers"]; ok {
				return strings.Split(v, ","), nil
			}
			return nil, nil
		},
	}
}

// selectPods are n pods in namespaces a and b; every tenth has app=match,
// every pod tiers "t<i%3>,t<i%5>".
func selectPods(n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		app := "other"
		if i%10 == 0 {
			app = "match"
		}
		pods[i] = pod([]string{"a", "b"}[i%2], fmt.Sprintf("p%04d", i), "1",
			"app="+app, fmt.Sprintf("tiers=t%d,t%d", i%3, i%5), fmt.Sprintf("n=%d", i))
	}
	return pods
}

func newSelectIndexer(t testing.TB, c StorageCodec, pods []*corev1.Pod) *Indexer {
	t.Helper()
	ix := NewIndexerWithOptions(toolscache.MetaNamespaceKeyFunc, selectIndexers(), IndexerOptions{Codec: c})
	for _, p := range pods {
		if err := ix.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return ix
}

func mustParse(t testing.TB, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func TestSelectDecodesOnlyTheObjectsItReturns(t *testing.T) {
	const n = 200
	c := &labelCountingCodec{countingCodec: podCodec(t)}
	pods := selectPods(n)
	ix := newSelectIndexer(t, c, pods)
	for _, tc := range []struct {
		name  string
		from  Candidates
		sel   Selection
		want  int // objects returned, and decodes
		reads int // labels read from bytes (-1: not checked; ignored when printed)
		// printed: the selector has an = or in requirement, so the cells'
		// label prints pass over the objects that lack the pair: reads are
		// the candidates whose print admits the selector (the prints' seed
		// is random per process, so their false positives vary by run).
		printed bool
	}{
		{"every object", Candidates{}, Selection{Labels: mustParse(t, "app=match")}, n / 10, n/10 + n/20, true},
		{"every object, limit", Candidates{}, Selection{Labels: mustParse(t, "app=match"), Limit: 3}, 3, -1, false},
		{"namespace index", Candidates{Index: toolscache.NamespaceIndex, Values: []string{"a"}},
			Selection{Labels: mustParse(t, "app in (match)")}, n / 10, n/10 + n/20, true},
		{"negative", Candidates{Index: toolscache.NamespaceIndex, Values: []string{"b"}},
			Selection{Labels: mustParse(t, "app!=match")}, n / 2, n / 2, false},
		{"no match", Candidates{}, Selection{Labels: mustParse(t, "app=none")}, 0, n / 20, true},
		{"no match, without a pair to print", Candidates{}, Selection{Labels: mustParse(t, "app notin (match)")},
			n - n/10, n, false},
		{"filed, no labels read", Candidates{Index: "app", Values: []string{"match"}},
			Selection{Filed: []IndexValue{{"tiers", "t1"}}}, 7, 0, false}, // i%10 == 0 and i%3 == 1
		{"no selector: limit only", Candidates{}, Selection{Limit: 4}, 4, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := c.decodes.Load()
			c.labelReads = 0
			got, err := ix.Select(tc.from, tc.sel)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.want {
				t.Errorf("%d objects, want %d", len(got), tc.want)
			}
			if decodes := c.decodes.Load() - before; decodes != int64(tc.want) {
				t.Errorf("%d decodes for %d objects returned, want one each", decodes, len(got))
			}
			switch {
			case tc.printed && c.labelReads != printAdmitted(pods, tc.from, tc.sel.Labels):
				t.Errorf("%d label reads, want %d (the candidates whose print admits the selector)",
					c.labelReads, printAdmitted(pods, tc.from, tc.sel.Labels))
			case !tc.printed && tc.reads >= 0 && c.labelReads != tc.reads:
				t.Errorf("%d label reads, want %d", c.labelReads, tc.reads)
			}
			for _, obj := range got {
				p := obj.(*corev1.Pod)
				if tc.sel.Labels != nil && !tc.sel.Labels.Matches(labels.Set(p.Labels)) {
					t.Errorf("%s returned, labels %v", p.Name, p.Labels)
				}
			}
		})
	}
}

// Without a LabelReader, each candidate the label prints do not rule out is
// decoded once, and the selected ones are returned as decoded (not decoded
// again).
func TestSelectWithoutLabelReaderDecodesEachCandidateOnce(t *testing.T) {
	const n = 100
	c := podCodec(t)
	pods := selectPods(n)
	ix := newSelectIndexer(t, c, pods)
	before := c.decodes.Load()
	got, err := ix.Select(Candidates{}, Selection{Labels: mustParse(t, "app=match")})
	if err != nil || len(got) != n/10 {
		t.Fatalf("%d objects (%v), want %d", len(got), err, n/10)
	}
	if decodes, want := c.decodes.Load()-before, printAdmitted(pods, Candidates{}, mustParse(t, "app=match")); decodes != int64(want) {
		t.Errorf("%d decodes, want %d (one per candidate its print does not rule out)", decodes, want)
	}
	before = c.decodes.Load()
	if got, err = ix.Select(Candidates{}, Selection{Labels: mustParse(t, "app!=match")}); err != nil || len(got) != n-n/10 {
		t.Fatalf("%d objects (%v), want %d", len(got), err, n-n/10)
	}
	if decodes := c.decodes.Load() - before; decodes != n {
		t.Errorf("%d decodes, want %d (one per candidate: != has no pair to print)", decodes, n)
	}
}

// printAdmitted returns how many of pods in from (every pod, or those of the
// namespaces from names in the namespace index) have a label print that sel's
// print query does not rule out: those Select checks further.
func printAdmitted(pods []*corev1.Pod, from Candidates, sel labels.Selector) int {
	q := printQueryOf(sel)
	n := 0
	for _, p := range pods {
		if from.Index == toolscache.NamespaceIndex && !slices.Contains(from.Values, p.Namespace) {
			continue
		}
		if q.mayMatch(printOf(p)) {
			n++
		}
	}
	return n
}

// Select returns what filtering List, ByIndex or Index would: for random
// selectors, candidates, limits, compact (with and without a LabelReader) and
// decoded storage.
func TestSelectMatchesFilteringTheReadsItReplaces(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 19))
	pods := selectPods(300)
	stores := map[string]*Indexer{
		"decoded":                     newSelectIndexer(t, nil, pods),
		"compact":                     newSelectIndexer(t, &labelCountingCodec{countingCodec: podCodec(t)}, pods),
		"compact without LabelReader": newSelectIndexer(t, podCodec(t), pods),
	}
	selectors := []string{"", "app=match", "app!=match", "app in (match,other)", "app notin (match)",
		"app", "!app", "n in (1,2,3,10,20)", "app=match,n notin (10,20)", "tiers=t0,t1"}
	for round := range 200 {
		selText := selectors[rng.IntN(len(selectors))]
		sel := Selection{Labels: mustParse(t, selText), Limit: []int{0, 0, 1, 7}[rng.IntN(4)]}
		var from Candidates
		switch rng.IntN(4) {
		case 1:
			from = Candidates{Index: toolscache.NamespaceIndex, Values: []string{"a"}}
		case 2:
			from = Candidates{Index: "tiers", Values: []string{"t0", "t1", "t4"}}
		case 3:
			from = Candidates{Index: "app", Values: []string{"match", "other"}, Distinct: true}
		}
		if rng.IntN(3) == 0 {
			sel.Filed = []IndexValue{{"tiers", fmt.Sprintf("t%d", rng.IntN(5))}}
		}
		for name, ix := range stores {
			got, err := ix.Select(from, sel)
			if err != nil {
				t.Fatalf("round %d %s: %v", round, name, err)
			}
			want := filterReads(t, ix, from, sel)
			if !slices.Equal(describeInOrder(got), want) {
				t.Fatalf("round %d %s: Select(%+v, %q, filed %v, limit %d)\n got: %v\nwant: %v",
					round, name, from, selText, sel.Filed, sel.Limit, describeInOrder(got), want)
			}
		}
	}
}

// describeInOrder is describeAll without the sort: the limit makes the order count.
func describeInOrder(objs []any) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, describe(o))
	}
	return out
}

// filterReads is Select done the slow way: the objects of List or ByIndex (one
// per key), filtered, cut at the limit.
func filterReads(t *testing.T, ix *Indexer, from Candidates, sel Selection) []string {
	t.Helper()
	var objs []any
	if from.Index == "" {
		objs = ix.List()
	} else {
		seen := map[string]bool{}
		for _, v := range from.Values {
			found, err := ix.ByIndex(from.Index, v)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range found {
				if k := keyOfObj(o); !seen[k] {
					seen[k] = true
					objs = append(objs, o)
				}
			}
		}
	}
	indexers := ix.GetIndexers()
	var out []string
	for _, o := range objs {
		if sel.Limit > 0 && len(out) == sel.Limit {
			break
		}
		if !sel.Labels.Matches(labels.Set(o.(metav1.Object).GetLabels())) {
			continue
		}
		keep := true
		for _, f := range sel.Filed {
			values, _ := indexers[f.Index](o)
			keep = keep && slices.Contains(values, f.Value)
		}
		if keep {
			out = append(out, describe(o))
		}
	}
	return out
}

func TestSelectAllocatesPerObjectReturnedNotPerCandidate(t *testing.T) {
	const n = 2000
	ix := newSelectIndexer(t, &labelCountingCodec{countingCodec: podCodec(t)}, selectPods(n))
	sel := Selection{Labels: mustParse(t, "app=none")}
	allocs := testing.AllocsPerRun(20, func() {
		if got, err := ix.Select(Candidates{}, sel); err != nil || len(got) != 0 {
			t.Fatalf("%d objects, %v", len(got), err)
		}
	})
	if allocs > 8 {
		t.Errorf("a Select of no object over %d candidates allocated %v times, want a few", n, allocs)
	}
}

func TestSelectReportsMissingIndexes(t *testing.T) {
	ix := newSelectIndexer(t, nil, selectPods(3))
	if _, err := ix.Select(Candidates{Index: "nope", Values: []string{"x"}}, Selection{}); err == nil ||
		err.Error() != "index with name nope does not exist" {
		t.Errorf("missing candidate index: %v", err)
	}
	if _, err := ix.Select(Candidates{}, Selection{Filed: []IndexValue{{"nope", "x"}}}); err == nil ||
		err.Error() != "index with name nope does not exist" {
		t.Errorf("missing filed index: %v", err)
	}
}

// The Protobuf codec is a LabelReader (the interface the Indexer looks for).
var _ LabelReader = (*codec.Protobuf)(nil)
var _ LabelReader = (*codec.CBOR)(nil)
var _ LabelReader = codec.UnstructuredCBOR{}
