package informer

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Snapshots: an informer with compact storage can write its store to a file
// (snapshot_file.go) at an interval and when it stops (snapshot_writer.go),
// and start from that file instead of a full list (snapshot_resume.go): the
// records are loaded into a private staging set, brought to the server's
// current state by a watch resumed from the snapshot's resourceVersion (or,
// when the server no longer has that resourceVersion, by a metadata-only
// LIST compared by uid and resourceVersion), and handed to the DeltaFIFO as
// the first list, so handlers and HasSynced see exactly what a cold start
// shows them. Nothing is served from the snapshot before it caught up.
// client-go has no counterpart (its Reflector cannot start from a stored
// resourceVersion).

// Defaults of Snapshot.
const (
	// defaultSnapshotInterval is Snapshot.Interval's default.
	defaultSnapshotInterval = 5 * time.Minute
	// defaultSnapshotMaxAge is Snapshot.MaxAge's default: the API server's
	// watch cache keeps at least 75 s of history and up to 102,400 events
	// per kind, so a quiet kind resumes after hours; past an hour even a
	// quiet kind has most likely left the window, and the resumed watch
	// would only cost a request that answers 410.
	defaultSnapshotMaxAge = time.Hour
	// snapshotStopTimeout bounds the write made when the informer stops.
	snapshotStopTimeout = 10 * time.Second
)

// Snapshot configures an informer's snapshot file; the zero value (Dir "")
// is off. Snapshots need compact storage (Options.StorageCodec): an informer
// that holds its objects decoded logs once that snapshots are off for it and
// starts cold.
type Snapshot struct {
	// Dir holds the snapshot file (created with mode 0700 if absent; files
	// are written 0600). Required: "" turns snapshots off.
	Dir string
	// Name of the file within Dir; the caller makes it unique per informer.
	// Default: the informer's name, sanitized.
	Name string
	// Identity is what the caller says identifies the informer (GVK, shape,
	// namespace, selectors, shard range, codec and its version): a snapshot
	// written under another Identity is discarded.
	Identity string
	// Version, if set, replaces the build's identity (a hash of the running
	// executable) in the snapshot's header: a user who vouches that their
	// transforms and codecs are the same across builds sets it so that an
	// upgrade starts warm. "" = only the same executable resumes.
	Version string
	// Interval between writes once synced; 0 = 5 minutes.
	// One more write is made when the informer stops (bounded to 10 s).
	Interval time.Duration
	// MaxAge: a snapshot written longer ago than this is not resumed by a
	// watch (the server would answer 410) but compared with a metadata list;
	// 0 = 1 hour.
	MaxAge time.Duration
	// ListMetadata lists one page of the informer's scope as metadata,
	// honouring opts' Limit, Continue and ResourceVersion (as
	// ConsistencyCheck.List); nil = no metadata diff (a snapshot the watch
	// cannot resume starts cold).
	ListMetadata func(ctx context.Context, opts metav1.ListOptions) (*metav1.PartialObjectMetadataList, error)
	// Get reads one object in full (of the informer's Go type), for the
	// objects the metadata diff finds added or changed, honouring opts'
	// ResourceVersion: the diff asks for the metadata list's, so an answer
	// not older than the list, which kube-apiserver serves from its watch
	// cache instead of a read from etcd per object; nil = no diff.
	Get func(ctx context.Context, namespace, name string, opts metav1.GetOptions) (runtime.Object, error)
}

// enabled reports whether snapshots are configured.
func (s Snapshot) enabled() bool { return s.Dir != "" }

func (s Snapshot) interval() time.Duration {
	if s.Interval > 0 {
		return s.Interval
	}
	return defaultSnapshotInterval
}

func (s Snapshot) maxAge() time.Duration {
	if s.MaxAge > 0 {
		return s.MaxAge
	}
	return defaultSnapshotMaxAge
}

// buildHash returns the hash that names what produced a snapshot: of
// Version when set, else of the running executable (see executableHash).
func (s Snapshot) buildHash() ([32]byte, error) {
	if s.Version != "" {
		return sha256.Sum256([]byte("version:" + s.Version)), nil
	}
	return executableHash()
}

// identityHash is the hash of Identity kept in a snapshot's header.
func (s Snapshot) identityHash() [32]byte { return sha256.Sum256([]byte("identity:" + s.Identity)) }

// executableHash is the sha256 of the running executable, computed once per
// process.
var executableHash = sync.OnceValues(func() ([32]byte, error) {
	var sum [32]byte
	path, err := os.Executable()
	if err != nil {
		return sum, fmt.Errorf("locate executable: %w", err)
	}
	f, err := os.Open(path)
	if err != nil {
		return sum, fmt.Errorf("open executable: %w", err)
	}
	defer func() { _ = f.Close() }()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return sum, fmt.Errorf("hash executable: %w", err)
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
})
