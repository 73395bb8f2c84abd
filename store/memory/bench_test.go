package memory_test

import (
	"testing"

	"github.com/signd/signd/store/memory"
	"github.com/signd/signd/store/storetest"
)

// BenchmarkConsumeSAD: one SAD consumed with its audit entry, in memory;
// store/bolt has the same benchmark on a file.
func BenchmarkConsumeSAD(b *testing.B) {
	storetest.BenchConsume(b, open(b, memory.Options{}))
}
