// Seed 002, example 15: a fragment, with the list and the item it adds.
import llm Qwen from "ollama://localhost:11434/qwen3.6"

main agent Example {
    model Qwen

    main func(input) {
        items = ["a"]
        new_item = "b"
        first = items[0]
        count = items.length
        items.add(new_item)
        summary = items.summary

        return summary
    }
}
