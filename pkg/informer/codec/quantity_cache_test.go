package codec

import (
	"fmt"
	"reflect"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

// cachedEntry returns the cache's entry for s, nil if its slot holds another.
func cachedEntry(s string) *quantityEntry {
	if e := quantityCache[quantityHash([]byte(s))&(quantityCacheSize-1)].Load(); e != nil && e.s == s {
		return e
	}
	return nil
}

// A Quantity decoded through the cache is resource.ParseQuantity's, on a miss
// and on a hit, and the cache keeps a copy of the string, not the caller's
// bytes.
func TestParseQuantityIsParseQuantityAndKeepsItsOwnString(t *testing.T) {
	for _, s := range []string{"100m", "128Mi", "1", "0", "1.5", "2Gi", "500M", "1e3", "0.1", "-2", "12345678901234"} {
		want, err := resource.ParseQuantity(s)
		must(t, err)
		b := []byte(s)
		for round := range 2 {
			got, err := parseQuantity(b)
			must(t, err)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q, round %d: %#v, want %#v", s, round, got, want)
			}
		}
		if cachedEntry(s) == nil {
			t.Fatalf("%q is not cached", s)
		}
		for i := range b {
			b[i] = 'x' // the caller's bytes are reused
		}
		got, err := parseQuantity([]byte(s))
		must(t, err)
		if !reflect.DeepEqual(got, want) || got.String() != want.String() {
			t.Fatalf("%q after its bytes changed: %#v, want %#v", s, got, want)
		}
	}
}

// A Quantity held as an inf.Dec is never cached: two decodes must not share
// the pointer its methods write through.
func TestParseQuantityDoesNotShareADecimal(t *testing.T) {
	const s = "123456789012345678901234567890"
	want, err := resource.ParseQuantity(s)
	must(t, err)
	if !holdsDec(&want) {
		t.Fatalf("%q is not held as an inf.Dec: the test needs one that is", s)
	}
	a, err := parseQuantity([]byte(s))
	must(t, err)
	b, err := parseQuantity([]byte(s))
	must(t, err)
	if !reflect.DeepEqual(a, want) || !reflect.DeepEqual(b, want) {
		t.Fatalf("decoded %v and %v, want %v", &a, &b, &want)
	}
	if cachedEntry(s) != nil {
		t.Fatalf("%q is cached", s)
	}
	a.Add(resource.MustParse("1"))
	if b.Cmp(want) != 0 {
		t.Fatalf("adding to one decoded Quantity changed the other: %v", &b)
	}
	if q := resource.MustParse("100m"); holdsDec(&q) {
		t.Fatal("100m is held as an inf.Dec")
	}
}

// Decodes running at once, with more strings than slots, each get the
// Quantity of their string (with the race detector: no unsynchronised slot).
func TestParseQuantityConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				s := fmt.Sprintf("%dMi", (i*7+g)%(2*quantityCacheSize))
				got, err := parseQuantity([]byte(s))
				if err != nil {
					t.Error(err)
					return
				}
				if want := resource.MustParse(s); !reflect.DeepEqual(got, want) {
					t.Errorf("%q: %#v, want %#v", s, got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}
