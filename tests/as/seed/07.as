// Seed 002, example 07: the function in an agent, with its llm imports; the seed's "..." is a return here.
import llm Qwen from "ollama://localhost:11434/qwen3.6"
import llm Strong from "anthropic://claude-sonnet-4-0"

main agent Example {
    model Qwen

    func careful(input) {
        model Strong
        role "Specialist"
        return input
    }
}
