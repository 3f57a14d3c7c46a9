package codec

import (
	"errors"
	"testing"
)

// A new codec given the state of another decodes every record the other made,
// under each of its dictionaries, and goes on compressing against the last one
// without sampling a first dictionary of its own.
func TestCompressedStateRestoresEveryDictionaryIntoANewCodec(t *testing.T) {
	inner := podCodec(t)
	old := mustCompressed(t, inner)
	es := encodeEach(t, old, inner, benchPods(2000))
	es = append(es, encodeEach(t, old, inner, realisticPods(3000))...)
	n := old.Stats().Dictionaries
	if n < 2 {
		t.Fatalf("%d dictionaries, want a rebuilt one", n)
	}
	state := old.AppendState(nil)

	c := mustCompressed(t, inner)
	must(t, c.RestoreState(state))
	if got := c.Stats().Dictionaries; got != n {
		t.Fatalf("restored %d dictionaries, want %d", got, n)
	}
	checkDecodes(t, c, inner, es)

	// The next encodes compress against the last dictionary at once: no first
	// sample of 256 stored as they are, and no dictionary added by it.
	next := encodeEach(t, c, inner, realisticPods(300))
	for i, e := range next {
		if e.record[0] != byte(n) && e.record[0] != asIs {
			t.Fatalf("record %d after the restore names dictionary %d, want %d", i, e.record[0], n)
		}
	}
	if got := c.Stats(); got.AsIs > 30 || got.Dictionaries != n {
		t.Fatalf("after 300 encodes: %d stored as they are, %d dictionaries (want few, and %d)", got.AsIs, got.Dictionaries, n)
	}
	checkDecodes(t, c, inner, next)
	// Its own state, restored again, decodes both generations of records.
	again := mustCompressed(t, inner)
	must(t, again.RestoreState(c.AppendState(nil)))
	checkDecodes(t, again, inner, append(es, next...))
}

// A codec that has no dictionary yet has a state of none, which restores into
// a codec that then samples its first dictionary as a new one does.
func TestCompressedStateOfNoDictionary(t *testing.T) {
	inner := podCodec(t)
	state := mustCompressed(t, inner).AppendState(nil)
	c := mustCompressed(t, inner)
	must(t, c.RestoreState(state))
	es := encodeEach(t, c, inner, benchPods(300))
	if es[255].record[0] != asIs || es[256].record[0] != 1 {
		t.Fatalf("records 255 and 256 name dictionaries %d and %d, want none and the first", es[255].record[0], es[256].record[0])
	}
}

// A state restored into a codec in use, or one that is not a state, is refused
// and leaves the codec as it was.
func TestCompressedRestoreStateRefusesACodecInUseAndCorruptStates(t *testing.T) {
	inner := podCodec(t)
	src := mustCompressed(t, inner)
	es := encodeEach(t, src, inner, benchPods(600))
	state := src.AppendState(nil)

	used := mustCompressed(t, inner)
	encodeEach(t, used, inner, benchPods(1))
	if err := used.RestoreState(state); !errors.Is(err, errStateAfterUse) {
		t.Fatalf("restore into a codec that encoded: %v, want errStateAfterUse", err)
	}

	for name, bad := range map[string][]byte{
		"empty":                nil,
		"other format":         append([]byte{stateFormat + 1}, state[1:]...),
		"truncated":            state[:len(state)-10],
		"extended":             append(append([]byte(nil), state...), 0),
		"renumbered":           append([]byte{stateFormat, 1, 2}, state[3:]...),
		"too many":             {stateFormat, 9},
		"length past end":      {stateFormat, 1, 1, 10, 0xff, 0x7f},
		"not an S2 dictionary": {stateFormat, 1, 1, 10, 2, 0, 0},
	} {
		c := mustCompressed(t, inner)
		if err := c.RestoreState(bad); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: %v, want ErrCorrupt", name, err)
		}
		if c.Stats().Dictionaries != 0 {
			t.Fatalf("%s: a refused state left %d dictionaries", name, c.Stats().Dictionaries)
		}
		if _, err := c.Decode(es[len(es)-1].record); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: a record of a dictionary the codec lacks decodes: %v", name, err)
		}
	}
}

// Two records of one object made under different dictionaries (or one stored as
// it is) differ in bytes and are the same encoding; records of other objects are
// not, nor is a record that does not open.
func TestCompressedSameEncodedAcrossDictionaries(t *testing.T) {
	inner := podCodec(t)
	c := mustCompressed(t, inner)
	pods := benchPods(400)
	before := encodeEach(t, c, inner, pods[:1])[0].record // stored as it is
	encodeEach(t, c, inner, pods[1:])                     // the first dictionary is made
	after := encodeEach(t, c, inner, pods[:1])[0].record
	if before[0] != asIs || after[0] != 1 {
		t.Fatalf("records of dictionaries %d and %d, want none and the first", before[0], after[0])
	}
	if !c.SameEncoded(before, after) || !c.SameEncoded(after, before) {
		t.Fatal("one pod's records under two dictionaries compare unequal")
	}
	other := encodeEach(t, c, inner, pods[1:2])[0].record
	if c.SameEncoded(before, other) || c.SameEncoded(after, other) {
		t.Fatal("two pods' records compare equal")
	}
	corrupt := append([]byte(nil), after...)
	corrupt[len(corrupt)/2] ^= 0xff
	if c.SameEncoded(before, corrupt) || c.SameEncoded(before, before[:3]) {
		t.Fatal("a corrupt or short record compares equal")
	}
}
