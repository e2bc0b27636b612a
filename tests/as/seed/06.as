// Seed 002, example 06: the agent, with the llm import it names.
import llm Qwen from "ollama://localhost:11434/qwen3.6"

