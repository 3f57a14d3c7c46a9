//go:build !race

package codec

// raceDetector is true in a build with the race detector, whose slowdown the
// corpus-wide encoder tests (single-goroutine) skip.
const raceDetector = false
