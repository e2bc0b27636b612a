// Seed 002, example 25: a fragment, with the memory import and the reflection it records.
import llm Qwen from "ollama://localhost:11434/qwen3.6"
import memory Lessons from "file://./.agentscript/lessons.jsonl"

main agent Example {
    model Qwen

    main func(input) {
        reflection = { insight: "check the inputs first" }
        Lessons.add({
            kind: "lesson"
            text: reflection.insight
            goal: input.goal
        })

        past = Lessons.query({
            kind: "lesson"
            text: input.goal
            limit: 5
        })

        use past < 2k

        return past
    }
}
