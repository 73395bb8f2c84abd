package memory_test

import (
	"testing"

	"github.com/signd/signd/store/memory"
	"github.com/signd/signd/store/storetest"
	"github.com/signd/signd/store/storetest/backends"
)

// BenchmarkConsumeSAD: one SAD consumed with its audit entry, in memory;
// store/bolt has the same benchmark on a file.
func BenchmarkConsumeSAD(b *testing.B) {
	storetest.BenchConsume(b, backends.Memory(b, memory.Options{}))
}
