import tool Find from "sh://find"
import memory Lessons from "file://./lessons.jsonl"

main agent A {
    main func(input) {
        files = Find.search({ path: "." })
        Lessons.delete({ id: "1" })
        return files
    }
}
