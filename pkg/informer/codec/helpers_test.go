package codec

import (
	"slices"
	"testing"
)

// storageCodec is what every codec of the package is (pkg/informer's
// StorageCodec, which this package cannot import).
type storageCodec interface {
	Encode(obj any) ([]byte, error)
	Decode(data []byte) (any, error)
}

var (
	_ storageCodec = (*Protobuf)(nil)
	_ storageCodec = (*CBOR)(nil)
	_ storageCodec = UnstructuredCBOR{}
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func equalStrings(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got: %q\nwant: %q", what, got, want)
	}
}
