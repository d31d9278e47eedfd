package core

import (
	"fmt"
	"math/rand/v2"
)

// UUID is a random UUID (version 4 layout) drawn from r: an emulator seeds r
// so that its ids repeat from run to run.
func UUID(r *rand.Rand) string {
	hi, lo := r.Uint64(), r.Uint64()
	hi = (hi &^ (0xf << 12)) | (4 << 12)
	lo = (lo &^ (0x3 << 62)) | (0x2 << 62)
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", hi>>32, (hi>>16)&0xffff, hi&0xffff, lo>>48, lo&0xffffffffffff)
}
