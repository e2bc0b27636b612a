main agent A {
    main func(input) {
        return input
    }
}

main agent B {
    main func(input) {
        return input
    }
}
