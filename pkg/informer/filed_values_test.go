package informer

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestFiledValuesRoundTrip(t *testing.T) {
	seed := testSeed(t)
	t.Logf("seed %d (reproduce with INFORMER_TEST_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	cases := [][][]string{
		{{"ns"}},
		{{"ns"}, {"a/web"}, {"a/node-1", "__all_namespaces/node-1"}},
		{{"ns"}, nil},             // one value for two indexes: padded, not read as the single form
		{nil, {"x"}, nil},         // the same with three
		{{"ns"}, {"a", "b"}, nil}, // total+1 == n+1
		{nil, nil},                // nothing: nil
		{{""}, {"v"}},             // an empty value is a value
	}
	for range 200 {
		n := 1 + rng.IntN(5)
		vals := make([][]string, n)
		for i := range vals {
			c := rng.IntN(4)
			if rng.IntN(20) == 0 {
				c = 130 + rng.IntN(200) // a count of two uvarint bytes
			}
			for j := range c {
				vals[i] = append(vals[i], fmt.Sprintf("v%d-%d", i, j))
			}
		}
		cases = append(cases, vals)
	}
	for _, vals := range cases {
		n := len(vals)
		f := packFiled(n, func(i int) []string { return vals[i] })
		total := 0
		for _, v := range vals {
			total += len(v)
		}
		if total == 0 {
			if f != nil {
				t.Fatalf("%q packed as %q, want nil", vals, f)
			}
			continue
		}
		for i := range n {
			got := f.of(i, n)
			if !slices.Equal(got, vals[i]) || (len(vals[i]) == 0 && got != nil) {
				t.Fatalf("%q packed as %q: index %d reads %q, want %q", vals, f, i, got, vals[i])
			}
			if cap(got) != len(got) {
				t.Fatalf("index %d of %q returns a slice with room after it (cap %d): an append would write into the record", i, vals, cap(got))
			}
		}
	}
}

// packFiled is what the writer does for a record's values (filedSize,
// then fillFiled into the record's room), in a slice of its own.
func packFiled(n int, valuesOf func(i int) []string) filedValues {
	size := filedSize(n, valuesOf)
	if size == 0 {
		return nil
	}
	out := make(filedValues, size)
	fillFiled(out, n, valuesOf, nil)
	return out
}

func TestFiledValuesCostOneAllocationPerRecord(t *testing.T) {
	single := [][]string{{"ns"}, {"web"}}
	shaped := [][]string{{"ns"}, {"a/node-1", "__all_namespaces/node-1"}}
	packFiled(2, func(i int) []string { return shaped[i] }) // the shape's string is made once
	for name, vals := range map[string][][]string{"single": single, "shaped": shaped} {
		valuesOf := func(i int) []string { return vals[i] }
		allocs := testing.AllocsPerRun(100, func() {
			r := allocRecord(filedSize(2, valuesOf))
			fillFiled(r.vals, 2, valuesOf, nil)
		})
		if allocs != 1 {
			t.Errorf("%s: %v allocations per record, want 1 (the record with its values)", name, allocs)
		}
	}
}

func TestUvarintInReadsWhatAppendUvarintWrote(t *testing.T) {
	for _, x := range []uint64{0, 1, 127, 128, 300, 16383, 16384, 1<<32 + 5, 1<<63 - 1, 1 << 63, ^uint64(0)} {
		enc := string(binary.AppendUvarint([]byte("ab"), x))
		got, next := uvarintIn(enc, 2)
		if got != x || next != len(enc) {
			t.Errorf("uvarintIn(AppendUvarint(%d)) = %d, next %d; want %d, next %d", x, got, next, x, len(enc))
		}
		if x >= 128 {
			if _, next := uvarintIn(enc[:len(enc)-1], 2); next != -1 {
				t.Errorf("uvarintIn of %d cut short: next %d, want -1", x, next)
			}
		}
	}
	if _, next := uvarintIn("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 0); next != -1 {
		t.Errorf("uvarintIn of 11 bytes: next %d, want -1 (overflow)", next)
	}
}
