/// glibc's `malloc_trim(3)`: returns free heap pages (not only the top of the heap) to the system.
enum MemoryTrim {
    static func trim() {
        #if canImport(Glibc)
        _ = glibcMallocTrim(0)
        #endif
    }
}

#if canImport(Glibc)
@_silgen_name("malloc_trim")
private func glibcMallocTrim(_ pad: Int) -> Int32
#endif
