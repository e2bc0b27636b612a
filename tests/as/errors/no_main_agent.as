agent A {
    main func(input) {
        return input
    }
}

agent B {
    main func(input) {
        return input
    }
}
