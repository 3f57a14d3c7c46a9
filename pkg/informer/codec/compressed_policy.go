package codec

import (
	"math/rand/v2"
	"slices"
)

// rebuildPolicy decides when a Compressed codec makes a dictionary, and from
// which objects. Over the codec's encodes it keeps:
//
//   - the first sampleObjects inner encodings, from which the first
//     dictionary is built (then forgotten);
//   - a reservoir: a uniform sample of every encode so far, of about twice a
//     dictionary's bytes (copies; about 2 × 64 KiB);
//   - the recent objects that compress worse than the bound (the last
//     reservoir/4 of them).
//
// After a build, the ratio (bytes in / bytes out) of the next window of
// encodes is the dictionary's baseline. Then, every window: a ratio below
// rebuildBelow × the baseline builds the next dictionary from the recent
// worse objects (what the current dictionary lacks) and the reservoir (what
// is common); so does, once, the first window after refreshAfter ×
// sampleObjects encodes (the first dictionary saw only the first objects, of
// few templates when a list comes in key order). Neither happens once the
// codec holds maxDictionaries: the last one stays for good, and the samples
// are dropped.
//
// The policy is not safe for concurrent use: Compressed holds its lock
// around it.
type rebuildPolicy struct {
	sampleObjects   int
	maxDictionaries int

	encodes int // since the codec was made
	first   [][]byte
	// reservoir is a uniform sample of the encodes so far, of at most
	// reservoirCap objects; nil once sampling is over.
	reservoir    [][]byte
	reservoirCap int
	sampled      int // objects offered to the reservoir
	rng          *rand.Rand
	// worse holds the last objects that compressed worse than the bound, a
	// ring from worseNext.
	worse     [][]byte
	worseNext int
	refreshed bool

	// baseline is the ratio of the current dictionary's first window; 0
	// while it is measured (and before the first dictionary).
	baseline float64
	// The window's bytes in (inner encodings) and out (records), and its encodes.
	windowIn, windowOut, windowEncodes int
}

// The policy's constants.
const (
	// window is the number of encodes over which a ratio is measured.
	window = 512
	// rebuildBelow is the bound: a window whose ratio falls below this
	// fraction of the dictionary's baseline starts a rebuild; an object
	// compressed worse than that is a candidate of the next dictionary.
	rebuildBelow = 0.8
	// reservoirBytes is about what the reservoir holds.
	reservoirBytes = 2 * maxDictionaryBytes
	// refreshAfter is when the refresh happens, in multiples of
	// sampleObjects encodes.
	refreshAfter = 16
)

func newRebuildPolicy(sampleObjects, maxDictionaries int) *rebuildPolicy {
	return &rebuildPolicy{sampleObjects: sampleObjects, maxDictionaries: maxDictionaries,
		rng: rand.New(rand.NewPCG(0x5eed, uint64(sampleObjects)))}
}

// observe counts one encode: raw is the inner encoding, stored the record's
// length, dictionaries the number the codec holds. It reports whether a
// dictionary should be built now from candidates.
func (p *rebuildPolicy) observe(raw []byte, stored, dictionaries int) bool {
	p.encodes++
	if dictionaries >= p.maxDictionaries {
		p.first, p.reservoir, p.worse = nil, nil, nil
		return false
	}
	if dictionaries == 0 {
		p.first = append(p.first, slices.Clone(raw))
		if p.reservoir != nil { // a first build kept nothing: the sample goes on
			p.sample(raw)
		}
		if len(p.first) < p.sampleObjects {
			return false
		}
		if p.reservoir == nil {
			p.startReservoir()
		}
		return true
	}
	p.sample(raw)
	if p.baseline > 0 && float64(len(raw)) < rebuildBelow*p.baseline*float64(stored) {
		p.keepWorse(raw)
	}
	p.windowIn += len(raw)
	p.windowOut += stored
	p.windowEncodes++
	if p.windowEncodes < window {
		return false
	}
	ratio := float64(p.windowIn) / float64(p.windowOut)
	p.windowIn, p.windowOut, p.windowEncodes = 0, 0, 0
	switch {
	case p.baseline == 0:
		p.baseline = ratio
		return false
	case ratio < rebuildBelow*p.baseline:
		return true
	case !p.refreshed && p.encodes >= refreshAfter*p.sampleObjects:
		p.refreshed = true
		return true
	}
	return false
}

// startReservoir sizes the reservoir from the first objects and fills it
// with a sample of them.
func (p *rebuildPolicy) startReservoir() {
	total := 0
	for _, f := range p.first {
		total += len(f)
	}
	p.reservoirCap = min(max(16, reservoirBytes*len(p.first)/max(total, 1)), p.sampleObjects)
	p.reservoir = make([][]byte, 0, p.reservoirCap)
	for _, f := range p.first {
		p.sample(f)
	}
}

// sample offers raw to the reservoir (algorithm R).
func (p *rebuildPolicy) sample(raw []byte) {
	p.sampled++
	if len(p.reservoir) < p.reservoirCap {
		p.reservoir = append(p.reservoir, slices.Clone(raw))
	} else if j := p.rng.IntN(p.sampled); j < p.reservoirCap {
		p.reservoir[j] = append(p.reservoir[j][:0], raw...)
	}
}

func (p *rebuildPolicy) keepWorse(raw []byte) {
	n := max(1, p.reservoirCap/4)
	if len(p.worse) < n {
		p.worse = append(p.worse, slices.Clone(raw))
		return
	}
	p.worse[p.worseNext] = append(p.worse[p.worseNext][:0], raw...)
	p.worseNext = (p.worseNext + 1) % n
}

// candidates returns the objects to build the next dictionary from: the first
// objects for the first one; else the recent worse objects, newest first, then
// the reservoir.
func (p *rebuildPolicy) candidates() [][]byte {
	if p.first != nil {
		return p.first
	}
	var c [][]byte
	for i := range p.worse {
		c = append(c, p.worse[(p.worseNext-1-i+2*len(p.worse))%len(p.worse)])
	}
	return append(c, p.reservoir...)
}

// built records the outcome of a build: ok when a dictionary was made (its
// baseline is measured next). A first dictionary that kept nothing (no
// candidate worth an exemplar) is built again from twice the objects; a
// rebuild that kept nothing leaves the current dictionary and its baseline.
func (p *rebuildPolicy) built(ok bool, dictionaries int) {
	p.windowIn, p.windowOut, p.windowEncodes = 0, 0, 0
	switch {
	case ok:
		p.first, p.worse, p.worseNext, p.baseline = nil, nil, 0, 0
	case dictionaries == 0:
		p.first, p.sampleObjects = nil, 2*p.sampleObjects
	}
}

// restored sets the policy of a codec given dictionaries it did not make
// (Compressed.RestoreState): no first sample, a reservoir from now on, the
// refresh done (the dictionary was made from a picture of the kind already),
// and the baseline measured over the next window, as after a build.
func (p *rebuildPolicy) restored(dictionaries int) {
	p.first, p.worse, p.worseNext, p.baseline, p.refreshed = nil, nil, 0, 0, true
	p.windowIn, p.windowOut, p.windowEncodes = 0, 0, 0
	if dictionaries < p.maxDictionaries {
		p.reservoirCap = min(64, p.sampleObjects)
		p.reservoir = make([][]byte, 0, p.reservoirCap)
	}
}
