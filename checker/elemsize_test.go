package checker

import (
	"testing"
	"unsafe"
)

// The elements are most of the memory of a long history: keep them at 64
// bytes.
func TestElemInfoSize(t *testing.T) {
	if n := unsafe.Sizeof(elemInfo{}); n > 64 {
		t.Fatalf("elemInfo is %d bytes, want at most 64", n)
	}
}
