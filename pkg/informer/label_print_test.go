package informer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
)

// A label print never rules out an object whose labels match, for any
// selector; it rules out most that lack a pair an =, == or in asks for.
// Reproduce with INFORMER_TEST_SEED=<seed>.
func TestLabelPrintNeverRulesOutAMatchingObject(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 0))
	word := func() string { return fmt.Sprintf("v%d", rng.IntN(8)) }
	keys := []string{"app", "tier", "team", "example.com/zone", "x"}
	ruledOut, lacking := 0, 0
	for range 20000 {
		set := labels.Set{}
		for _, k := range keys {
			if rng.IntN(3) > 0 {
				set[k] = word()
			}
		}
		k := keys[rng.IntN(len(keys))]
		var expr string
		switch rng.IntN(6) {
		case 0:
			expr = k + "=" + word()
		case 1:
			expr = k + "==" + word()
		case 2:
			expr = fmt.Sprintf("%s in (%s,%s)", k, word(), word())
		case 3:
			expr = k + "!=" + word()
		case 4:
			expr = fmt.Sprintf("%s notin (%s),%s", k, word(), keys[rng.IntN(len(keys))])
		default:
			expr = fmt.Sprintf("%s=%s,%s in (%s)", k, word(), keys[rng.IntN(len(keys))], word())
		}
		sel, err := labels.Parse(expr)
		if err != nil {
			t.Fatal(err)
		}
		q := printQueryOf(sel)
		may := q.mayMatch(printOfLabels(set))
		if sel.Matches(set) && !may {
			t.Fatalf("print of %v rules out %q, which matches", set, expr)
		}
		if len(q) > 0 && !sel.Matches(set) {
			lacking++
			if !may {
				ruledOut++
			}
		}
	}
	if lacking == 0 || float64(ruledOut) < 0.8*float64(lacking) {
		t.Errorf("prints ruled out %d of %d non-matching objects with a printed pair, want at least 80%%", ruledOut, lacking)
	}
}

// Selectors without an =, == or in requirement have no print query, and a
// cell without a print (0) is never ruled out.
func TestLabelPrintQueryOnlyForPairs(t *testing.T) {
	for _, expr := range []string{"", "app", "!app", "app!=a", "app notin (a,b)"} {
		sel, err := labels.Parse(expr)
		if err != nil {
			t.Fatal(err)
		}
		if q := printQueryOf(sel); q != nil {
			t.Errorf("printQueryOf(%q) = %v, want nil", expr, q)
		}
	}
	if q := printQueryOf(labels.SelectorFromSet(labels.Set{"app": "a"})); !q.mayMatch(0) {
		t.Error("a cell without a print was ruled out")
	}
	if printQueryOf(nil) != nil {
		t.Error("printQueryOf(nil) is not nil")
	}
}

// The print follows every write path: an update that changes a label, a
// delete and re-add, a Replace, AddIndexers and BuildIndex (which copy the
// cells), compact and decoded.
func TestSelectFollowsLabelChangesThroughEveryWritePath(t *testing.T) {
	for name, c := range map[string]StorageCodec{"compact": podCodec(t), "decoded": nil} {
		t.Run(name, func(t *testing.T) {
			ix := newSelectIndexer(t, c, selectPods(50))
			selected := func(expr string) []string {
				t.Helper()
				got, err := ix.Select(Candidates{}, Selection{Labels: mustParse(t, expr)})
				must(t, err)
				return names(got)
			}
			moved := pod("a", "p0000", "2", "app=moved")
			must(t, ix.Update(moved))
			equalStrings(t, "app=moved after Update", selected("app=moved"), []string{"a/p0000"})
			if got := selected("app=match"); len(got) != 4 {
				t.Errorf("app=match after Update: %v, want the 4 others", got)
			}
			must(t, ix.Delete(moved))
			equalStrings(t, "app=moved after Delete", selected("app=moved"), nil)
			must(t, ix.Add(pod("a", "p0000", "3", "app=back")))
			equalStrings(t, "app=back after Add", selected("app=back"), []string{"a/p0000"})
			byName := func(obj any) ([]string, error) { return []string{obj.(metav1.Object).GetName()}, nil }
			must(t, ix.AddIndexers(toolscache.Indexers{"byName": byName}))
			equalStrings(t, "app=back after AddIndexers", selected("app=back"), []string{"a/p0000"})
			must(t, ix.BuildIndex(context.Background(), "byName2", byName, BuildIndexOptions{}))
			equalStrings(t, "app=back after BuildIndex", selected("app=back"), []string{"a/p0000"})
			must(t, ix.Replace([]any{pod("b", "q", "4", "app=replaced")}, "4"))
			equalStrings(t, "app=replaced after Replace", selected("app=replaced"), []string{"b/q"})
		})
	}
}
